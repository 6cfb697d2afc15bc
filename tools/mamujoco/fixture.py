"""Write conformance/mamujoco/hom_actions.json: for each DSBO MuJoCo task, the observation
dictionary of `reset(seed=3)`, the HOM's local states made from it by `agora.mamujoco`, a
seeded θ, and the actions `agora.HomPolicy` (from Python) gives. The Rust test
`crates/agora-problems/tests/dsbo_policy.rs` checks the Rust policy gives these actions on these
states bit for bit, and the Python test checks the adapter and the binding give them again.

    target/pyvenv/bin/python tools/mamujoco/fixture.py
"""

import json
import random
from pathlib import Path

from agora import mamujoco

cases = []
for name in ["ma-swimmer-6", "ma-ant-6"]:
    for size, ablation in [("med", "full"), ("sm", "no_ri")]:
        t = mamujoco.MaMuJoCoTask(name, size=size, ablation=ablation, horizon=10)
        obs, _ = t.env.reset(seed=3)
        rng = random.Random(f"{name}/{size}/{ablation}")
        theta = [rng.uniform(-1.0, 1.0) for _ in range(t.dim)]
        states = t.states(obs)
        cases.append(
            dict(
                task=name,
                size=size,
                ablation=ablation,
                agents=len(t.agents),
                state_dim=t.state_dim,
                action_dim=t.action_dim,
                observation={a: [float(x) for x in obs[a]] for a in t.agents},
                states=states,
                theta=theta,
                actions=t.policy.act(theta, states),
            )
        )
out = Path(__file__).resolve().parents[2] / "conformance" / "mamujoco" / "hom_actions.json"
out.write_text(json.dumps({"reset_seed": 3, "cases": cases}, indent=1) + "\n")
print(f"wrote {out} ({len(cases)} cases)")
