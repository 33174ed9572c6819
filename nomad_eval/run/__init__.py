"""The run skeleton every scoring tier shares: the tier registry (registry.py), the helpers tiers have in common
(queries, case scoring, contexts, settings), and what happens around a tier's measurement (write the folder,
decide the gate, seal, announce). A floor above gate/ and below tiers/: no tier module imports another one."""
