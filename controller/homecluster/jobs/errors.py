"""The one error the Job builders raise: a slot or group spec a Job cannot be built from."""
from __future__ import annotations


class JobSpecError(ValueError):
    """A lifecycle Job cannot be built. The message names the object, the field and the fix."""
