"""Experiments run from Python: ``python -m agora.experiments.dsbo_mujoco`` (DSBO on
multi-agent MuJoCo)."""
