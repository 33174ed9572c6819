"""MiniLM loads once per process and input limit: a second embedder (the next sweep job's) reuses the model."""

from __future__ import annotations

import numpy as np

from nomad_eval.base.shipped import build


def test_a_second_embedder_reuses_the_loaded_model_and_embeds_the_same() -> None:
    first, second = build("embedder", "minilm"), build("embedder", "minilm")
    texts = ["How often should the kettle be descaled?", "Hard water leaves scale."]
    a = first.embed(texts)
    assert second._model is first._model
    assert np.array_equal(second.embed(texts), a)
    # Another input limit is another model: it cuts texts elsewhere, so it must not answer for this one.
    short = build("embedder", "minilm", max_input_tokens=8)
    assert short._model is not first._model and short._model.max_seq_length == 8
    assert first._model.max_seq_length == 256
    assert not np.allclose(short.embed([texts[0] * 5]), first.embed([texts[0] * 5]))
