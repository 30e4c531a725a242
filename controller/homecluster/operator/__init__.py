"""`homecluster run`: the wiring -- kopf handlers, the work queue and its workers, the webhook server.

See docs/controller.md. main.py is the CLI entry (add_arguments/run); handlers.py registers kopf;
controller.py runs the workers, each running homecluster.lifecycle.slotpass over one slot.
"""
