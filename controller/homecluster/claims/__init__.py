"""The claim controller's lifecycle concerns, one module each, and the Recorder (the only writer of
NodeClaim status). Each module is a function of the slot pass's Facts that performs the writes the
model names; homecluster.operator.slotpass calls them in order. See docs/controller.md.
"""
