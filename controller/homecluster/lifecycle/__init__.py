"""The lifecycle of claims and slots: the effectful half of each rule, one module per rule.

lifecycle/<rule>.py performs the writes that model/<rule>.py decides (same name), as a function of the
slot pass's Facts; slotpass.py runs them as an ordered list of steps; recorder.py is the only writer of
NodeClaim status, slotstatus.py the only writer of slot status. See docs/controller.md.
"""
