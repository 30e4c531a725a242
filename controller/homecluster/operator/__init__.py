"""`homecluster run`: kopf wiring, the kube client, the cache, the work queue and the per-slot pass.

See docs/controller.md. main.py is the CLI entry (add_arguments/run); handlers.py registers kopf;
controller.py runs the workers; slotpass.py is one pass over one slot.
"""
