"""Typed case records and their one codec (the floor above metrics/: records import only base/ and metrics/)."""

from nomad_eval.records.cases import (
    AnswerCase,
    Case,
    CaseBase,
    Hit,
    Kind,
    PositionCase,
    RetrievalCase,
    Values,
    kind_of,
    values,
)
from nomad_eval.records.codec import checked, decode, encode, line, out_of_range, summary

__all__ = ["AnswerCase", "Case", "CaseBase", "Hit", "Kind", "PositionCase", "RetrievalCase", "Values", "checked",
           "decode", "encode", "kind_of", "line", "out_of_range", "summary", "values"]
