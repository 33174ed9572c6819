"""Typed case records and their one codec (the floor above metrics/: records import only base/ and metrics/)."""

from nomad_eval.records.cases import (
    AnswerCase,
    Attack,
    Case,
    CaseBase,
    Hit,
    Kind,
    PositionCase,
    RetrievalCase,
    Values,
    by_name,
    hits,
    kind_of,
    only,
    values,
)
from nomad_eval.records.codec import checked, decode, encode, line, lines, out_of_range, summary

__all__ = ["AnswerCase", "Attack", "Case", "CaseBase", "Hit", "Kind", "PositionCase", "RetrievalCase", "Values",
           "by_name", "checked", "decode", "encode", "hits", "kind_of", "line", "lines", "only", "out_of_range",
           "summary", "values"]
