"""nomad-eval's Hydra sweeper (Hydra finds plugins only under the `hydra_plugins` namespace)."""
