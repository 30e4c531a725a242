"""A fault campaign's schedule, drawn from a seed: what to do to the system, and when.

Pure: `make_schedule(seed, ...)` returns the same list for the same arguments, so a failing run's seed
replays it (`benchmarks/chaos.py --seed S`). The driver (chaos_driver.py) carries the actions out; what an
action touches that does not exist when its moment comes (no running pod to kill, no claim to delete) is
skipped and the run's report says so.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

# kind -> relative weight
WEIGHTS: dict[str, int] = {
    "kill-operator": 3,  # SIGKILL the operator, restart it after `pause` seconds
    "api-fail": 6,  # the next `count` writes of `resource` fail with `code`
    "drop-watches": 2,  # every open watch stream ends
    "watch-410": 1,  # the history is compacted, then every stream ends: resuming clients get 410 Gone
    "delay-watches": 1,  # watch events arrive `seconds` late for `hold` seconds
    "machine-fault": 4,  # a machine misbehaves (`knob`) for `hold` seconds
    "power-button": 2,  # someone presses a machine's power button (on or off)
    "kill-pod": 2,  # a running lifecycle pod is deleted mid-run
    "increase": 6,  # the autoscaler's NodeGroupIncreaseSize (`delta`)
    "decrease": 1,  # NodeGroupDecreaseTargetSize(-1)
    "delete-nodes": 2,  # NodeGroupDeleteNodes of one of the group's nodes
    "claim-create": 2,  # a person applies a claim for a slot
    "claim-delete": 3,  # a person deletes a claim
    "slot-remove": 1,  # a slot with no claim is removed from Git, and re-added `hold` seconds later
    "webhook-down": 1,  # our admission webhooks unreachable (`mode`) for `hold` seconds; the operator keeps running
    "group-add": 1,  # a second Group and its slot appear, get a claim (`via`), and the Group goes `hold` s later
}
# Drawn from a stream of their own, so that adding one left every seed's other draws as they were:
# kind -> chance per minute of faults (at most one per run)
OWN_STREAM: dict[str, float] = {
    "two-operators": 0.5,  # a second operator runs for `hold` s (a rolling update); with `kill`, the leader is SIGKILLed
    # a machine that is on (a held one first: issue 23 item 2) reads NotReady for `seconds`, then Ready again
    "notready-blip": 1.0,
}
API_RESOURCES = ("nodeclaims.infra.homecluster.dev", "nodes.infra.homecluster.dev", "jobs.batch", "pods",
                 "events", "nodes")
API_CODES = (409, 500, 429, "timeout")
MACHINE_KNOBS = ("bmc-unreachable", "wrong-credentials", "never-boots", "boots-but-never-registers",
                 "ignores-power-commands", "power-readback-lies", "flaps=1", "taints-never-clear",
                 "ignores-graceful-shutdown")


@dataclass(frozen=True)
class Action:
    at: float  # seconds after the faults begin
    kind: str
    args: tuple[tuple[str, object], ...] = field(default=())

    def arg(self, name: str, default: object = None) -> object:
        return dict(self.args).get(name, default)

    def __str__(self) -> str:
        args = " ".join(f"{k}={v}" for k, v in self.args)
        return f"{self.at:6.2f}s {self.kind}{' ' + args if args else ''}"


def _args(rng: random.Random, kind: str, slots: list[str]) -> dict[str, object]:
    if kind == "kill-operator":
        return {"pause": round(rng.uniform(0.0, 3.0), 2)}
    if kind == "api-fail":
        return {"resource": rng.choice(API_RESOURCES), "code": rng.choice(API_CODES), "count": rng.randint(1, 3)}
    if kind == "delay-watches":
        return {"seconds": round(rng.uniform(0.2, 1.5), 2), "hold": round(rng.uniform(2.0, 6.0), 1)}
    if kind == "machine-fault":
        return {"slot": rng.choice(slots), "knob": rng.choice(MACHINE_KNOBS), "hold": round(rng.uniform(3.0, 15.0), 1)}
    if kind == "power-button":
        return {"slot": rng.choice(slots), "press": rng.choice(("on", "off"))}
    if kind == "increase":
        return {"delta": rng.randint(1, 2)}
    if kind == "webhook-down":
        return {"mode": rng.choice(("refused", "timeout")), "hold": round(rng.uniform(3.0, 10.0), 1)}
    if kind == "two-operators":  # held past the 15 s lease, so a killed leader's standby takes over
        return {"hold": round(rng.uniform(20.0, 30.0), 1), "kill": rng.random() < 0.5}
    if kind == "notready-blip":
        return {"slot": rng.choice(slots), "seconds": round(rng.uniform(5.0, 12.0), 1)}
    if kind == "group-add":
        return {"via": rng.choice(("autoscaler", "hand")), "hold": round(rng.uniform(4.0, 12.0), 1)}
    if kind in ("claim-create", "slot-remove"):
        return {"slot": rng.choice(slots), "hold": round(rng.uniform(3.0, 10.0), 1)}
    if kind in ("kill-pod", "delete-nodes", "claim-delete"):
        return {"pick": rng.randint(0, 1 << 16)}  # which of the candidates there are then
    return {}


def make_schedule(seed: int, seconds: float, slots: list[str], rate: float = 0.5) -> list[Action]:
    """About `rate` actions per second for `seconds`, drawn from `seed`."""
    rng = random.Random(seed)
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    out, t = [], 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= seconds:
            return sorted(out + _own_stream(seed, seconds, slots), key=lambda a: a.at)
        kind = rng.choices(kinds, weights)[0]
        out.append(Action(round(t, 2), kind, tuple(sorted(_args(rng, kind, slots).items()))))


def _own_stream(seed: int, seconds: float, slots: list[str]) -> list[Action]:
    out = []
    for kind, per_minute in sorted(OWN_STREAM.items()):
        rng = random.Random(f"{kind}/{seed}")
        if rng.random() < min(per_minute * seconds / 60.0, 1.0):
            at = round(rng.uniform(0.01, seconds - 0.01), 2)
            out.append(Action(at, kind, tuple(sorted(_args(rng, kind, slots).items()))))
    return out


def describe(schedule: list[Action]) -> str:
    return "\n".join(str(a) for a in schedule)
