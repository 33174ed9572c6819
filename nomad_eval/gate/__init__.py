"""The gate: a run's floors and its compare with a baseline, decided in one call,
`nomad_eval.gate.decision.decide(report, cases, settings) -> GateOutcome`.

Floors (floors.py), the question pairing (pairing.py) and the metric-by-metric compare (compare.py), the verdict
against a baseline (verdict.py), the record every artifact carries (record.py) and its junit.xml (junit.py), the
baseline store (store.py) and the choice of a baseline (choose.py), and the console's account of it (announce.py).
It takes plain values (settings.py), never a config; the tiers above build them. This file imports nothing, so a
light reader of one part (the corpus check reads the floors' settings) loads no statistics.
"""
