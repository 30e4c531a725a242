"""The pure NodeClaim model: every decision the controller takes, as functions of plain data.

Nothing in this package performs I/O, reads a clock or reads the environment. API objects come
in as the dicts the Kubernetes API returns, the current time comes in as an aware UTC datetime,
and every duration comes from an injected `Settings`. Handlers fetch facts, call one function
here, and perform the one action it names; that is what lets the model be tested row by row
against the specification's decision table.

One module per concern; where a rule also acts, lifecycle/<same name>.py performs what it decides:

- `settings`    the durations and bounds, with the specification's defaults
- `timestamps`  RFC 3339 strings <-> aware UTC datetimes
- `objects`     read-only accessors for the dict shapes of Node, NodeClaim, Group, corev1 Node
- `phases`      claim and slot phases, power states, reasons
- `observe`     observed power and node usability from a corev1 Node
- `boundary`    which corev1 Node may be taken as a slot's machine
- `decide`      the decision table: (claim phase, deletion, power, usability) -> (slot phase, action)
- `deadlines`   the boot budget (spec.deadlineAt) and the sub-deadlines of one boot
- `attempts`    seeding status.attempt from the slot's lastClaim digest, the bound, which claims count
                and the lastClaim digest to write
- `supersede`   one live claim per slot: who owns it, who is superseded
- `machinegone` the MachineGone clock of a ready claim
- `shutdown`    the bound and hold-off on repeated shutdown Jobs
- `slotstatus`  the Node (slot) status a reconciler should write, and the minimal patch
- `collection`  when a terminal claim is collected (ttlSecondsAfterFinished)
"""
