"""What the tests share (issue 27's tests/support/): the one wait (waits.until, and waits.poll that gives up
without failing), the lab settings scaled to the machine's load (lab_settings), checks on the real API server
(kube), a throwaway HTTP server (http), the repository's scripts as modules (scripts).

tests/ is on sys.path (pytest puts a rootdir conftest's folder there, and tests/conftest.py is one), so every
test folder imports these as `support.<module>` without a sys.path line of its own.
"""
