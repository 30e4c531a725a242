"""The lifecycle rules through real passes on the lab API server: the pool's fixtures (support.pool)."""
from support.pool import env, lab, logged, pool  # noqa: F401  pylint: disable=unused-import  (the fixtures)
