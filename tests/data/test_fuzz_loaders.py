"""Fuzzed suites, corpora and BEIR folders: each either loads or fails with InvalidInput naming file and line."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.base.patterns import search
from nomad_eval.data.beir import load_beir_corpus, load_beir_goldens
from nomad_eval.data.corpus import load_markdown_dir
from nomad_eval.data.golden import goldens_hash, load_goldens
from tests.fuzz_support import fuzz_settings, run, tried

# Text that reaches the awkward corners: lone surrogates (as JSON escapes), U+2028 and NEL (line breaks to
# str.splitlines, not to JSON), NUL, a byte-order mark, combining marks.
AWKWARD = st.sampled_from(["\ud800", "\udfff", "\u2028", "\x85", "\x00", "\ufeff", "e\u0301", "\r", "\t"])
TEXT = st.lists(st.text(max_size=6) | AWKWARD, max_size=4).map("".join)
# Regex syntax, so patterns are often valid, often not, and sometimes nested past the parser's recursion.
PATTERN = st.lists(st.sampled_from([*r"()[]{}\|?*+^$.:-,<>=!#", r"\p{L}", "[[:alpha:]]", r"\b", "a", "é", "1"]),
                   max_size=12).map("".join) | st.integers(1, 3000).map(lambda n: "(" * n + "a" + ")" * n)
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSON = st.recursive(SCALAR, lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3), max_leaves=8)
TURN = st.fixed_dictionaries({}, optional={"role": st.sampled_from(["user", "assistant", "system", "bot"]) | JSON,
                                           "content": TEXT | JSON})
DOC_IDS = ["kettle", "rope", ""]
GOLDEN = st.fixed_dictionaries({}, optional={
    "id": st.sampled_from(["g1", "g2", ""]) | TEXT | JSON,
    "query": TEXT | JSON,
    "turns": st.lists(TURN, max_size=3) | JSON,
    "relevantDocIds": st.lists(st.sampled_from(DOC_IDS) | TEXT, max_size=2) | JSON,
    "mustInclude": st.lists(PATTERN, max_size=2) | JSON,
    "mustNotInclude": st.lists(PATTERN, max_size=2) | JSON,
    "expectRefusal": st.booleans() | JSON,
    "tags": st.lists(TEXT, max_size=2) | JSON,
    "unknownKey": JSON,
})


def _deep(n: int, key: str = "tags") -> str:
    """A golden with a value nested `n` deep (past json's recursion limit for large n; json.dumps cannot build it)."""
    return '{"id": "deep", "query": "q", "relevantDocIds": ["kettle"], "' + key + '": ' + "[" * n + "]" * n + "}"


LINE = (GOLDEN.map(json.dumps) | GOLDEN.map(lambda g: json.dumps(g, ensure_ascii=False)) | TEXT
        | st.binary(max_size=40).map(lambda b: b.decode("latin-1"))
        | st.builds(_deep, st.integers(1, 50_000), st.sampled_from(["tags", "turns", "unknownKey"]))
        | st.sampled_from(["", "   ", "// a comment", "[]", "null", "NaN", '{"id": NaN}']))


def _located(d: Defect, name: str, lines: int) -> None:
    """A defect names the file, a line inside it (or none, for the whole file), and prints as text."""
    assert d.file == name
    assert d.line is None or 1 <= d.line <= lines
    str(d).encode("utf-8")  # a terminal or log can show it


def test_fuzzed_suites_load_or_name_file_and_line(tmp_path: Path) -> None:
    @fuzz_settings(200)
    @given(st.lists(LINE, max_size=5), st.booleans(), st.sampled_from(["\n", "\r\n"]),
           st.none() | st.just(set(DOC_IDS)))
    def prop(lines: list[str], bom: bool, newline: str, doc_ids: set[str] | None) -> None:
        tried("golden loader")
        path = tmp_path / f"{uuid.uuid4().hex}.jsonl"
        # surrogatepass: a raw lone surrogate becomes bytes that are not UTF-8, which the loader must name.
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + newline.join(lines).encode("utf-8", "surrogatepass"))
        count = path.read_bytes().count(b"\n") + 1
        warnings: list[Defect] = []
        try:
            goldens = load_goldens(path, doc_ids, warnings)
        except InvalidInput as exc:
            assert exc.defects
            for d in exc.defects:
                _located(d, str(path), count)
            return
        for w in warnings:
            _located(w, str(path), count)
        # What loads is usable: it hashes, serialises, and every pattern matches without error.
        goldens_hash(goldens)
        json.dumps([g.wire() for g in goldens], ensure_ascii=False).encode("utf-8")
        for g in goldens:
            for p in g.must_include + g.must_not_include:
                assert search(p, "an answer") in (True, False, None)

    assert run("golden loader", prop) >= 200


def test_fuzzed_binary_suite_files_are_named(tmp_path: Path) -> None:
    @fuzz_settings(200)
    @given(st.binary(max_size=300))
    def prop(blob: bytes) -> None:
        tried("golden loader, raw bytes")
        path = tmp_path / f"{uuid.uuid4().hex}.jsonl"
        path.write_bytes(blob)
        try:
            load_goldens(path, None, [])
        except InvalidInput as exc:
            for d in exc.defects:
                _located(d, str(path), blob.count(b"\n") + 1)

    assert run("golden loader, raw bytes", prop) >= 200


def test_a_json_line_separator_inside_a_string_is_text_not_a_line_break(tmp_path: Path) -> None:
    """JSON allows a raw U+2028 in a string; splitting lines there cut a valid golden in two."""
    path = tmp_path / "s.jsonl"
    golden = {"id": "g", "query": "first\u2028second\x85third", "relevantDocIds": ["kettle"]}
    path.write_text(json.dumps(golden, ensure_ascii=False) + "\n" + json.dumps({**golden, "id": "g2"}) + "\n")
    loaded = load_goldens(path, {"kettle"}, [])
    assert [g.query for g in loaded] == [golden["query"]] * 2


def test_a_lone_surrogate_escape_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"id": "ok", "query": "q", "relevantDocIds": ["d"]}\n'
                    '{"id": "bad", "query": "\\ud800", "relevantDocIds": ["d"]}\n')
    with pytest.raises(InvalidInput) as exc:
        load_goldens(path, {"d"}, [])
    [d] = exc.value.defects
    assert (d.file, d.line) == (str(path), 2) and "surrogate" in d.message


@pytest.mark.parametrize("depth", [100, 100_000])  # past the depth limit; past the parser's recursion
def test_a_nested_too_deeply_line_is_refused_at_its_line(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n" + _deep(depth, "unknownKey") + "\n")
    with pytest.raises(InvalidInput) as exc:
        load_goldens(path, {"kettle"}, [])
    [d] = exc.value.defects
    assert (d.file, d.line) == (str(path), 2) and "nested deeper than 64 levels" in d.message


# The markdown corpus ---------------------------------------------------------------------------------------

DOC = (st.binary(max_size=120) | TEXT.map(lambda t: t.encode("utf-8", "surrogatepass"))
       | st.sampled_from([b"", b"   \n", b"\xef\xbb\xbf# Title\nbody", b"# T\n\x00", b"\xff\xfe", b"x" * 200]))
ENTRY = st.tuples(st.sampled_from(["file", "folder", "broken link"]), DOC)


def test_fuzzed_corpus_folders_load_or_name_the_file(tmp_path: Path) -> None:
    limit = 150  # small, so the generated documents cross it often

    @fuzz_settings(200)
    @given(st.lists(ENTRY, max_size=4))
    def prop(entries: list[tuple[str, bytes]]) -> None:
        tried("markdown corpus loader")
        folder = tmp_path / uuid.uuid4().hex
        folder.mkdir()
        for i, (kind, blob) in enumerate(entries):
            path = folder / f"doc{i}.md"
            if kind == "file":
                path.write_bytes(blob)
            elif kind == "folder":
                path.mkdir()
            else:
                path.symlink_to(folder / "nowhere")
        try:
            docs = load_markdown_dir(folder, max_bytes=limit)
        except InvalidInput as exc:
            for d in exc.defects:
                assert d.file == str(folder) or Path(d.file).parent == folder
                str(d).encode("utf-8")
            return
        assert [d.doc_id for d in docs] == [f"doc{i}" for i in range(len(entries))]
        assert all(d.text.strip() and len(d.text.encode()) <= limit for d in docs)

    assert run("markdown corpus loader", prop) >= 200


def test_a_document_above_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# Fine\nA small document.\n")
    huge = tmp_path / "huge.md"
    with huge.open("wb") as fh:  # sparse: 11 MiB on paper, nothing on disk
        fh.truncate(11 * 2**20)
    with pytest.raises(InvalidInput) as exc:
        load_markdown_dir(tmp_path)
    [d] = exc.value.defects
    assert d.file == str(huge) and "11,534,336 bytes, above the 10,485,760-byte limit" in d.message


def test_a_bom_does_not_hide_the_title(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"\xef\xbb\xbf# Kettle\nDescale monthly.\n")
    [doc] = load_markdown_dir(tmp_path)
    assert doc.title == "Kettle" and not doc.text.startswith("\ufeff")


# BEIR folders ----------------------------------------------------------------------------------------------

BEIR_ID = st.sampled_from(["d1", "d2", "q1", "", "d1"]) | TEXT
BEIR_OBJ = st.fixed_dictionaries({}, optional={"_id": BEIR_ID | JSON, "title": TEXT | JSON, "text": TEXT | JSON})
BEIR_LINE = (BEIR_OBJ.map(json.dumps) | TEXT | st.integers(1, 50_000).map(lambda n: "[" * n + "]" * n)
             | st.sampled_from(["", '{"_id": "d1", "text": "a document"}', '{"_id": "q1", "text": "a question"}']))
JSONL = st.lists(BEIR_LINE, max_size=4).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))
QREL = st.lists(st.sampled_from(["q1", "d1", "d2", "1", "0", "-1", "x", "\t", " ", "query-id", "١"]) | TEXT,
                max_size=5).map("".join)
QRELS = st.lists(QREL, max_size=4).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))
MAYBE = st.none() | st.binary(max_size=40)  # None: the file is missing


def test_fuzzed_beir_folders_load_or_name_file_and_line(tmp_path: Path) -> None:
    @fuzz_settings(300)
    @given(JSONL | MAYBE, JSONL | MAYBE, QRELS | MAYBE, st.booleans())
    def prop(corpus: bytes | None, queries: bytes | None, qrels: bytes | None, header: bool) -> None:
        tried("BEIR loader")
        folder = tmp_path / uuid.uuid4().hex
        (folder / "qrels").mkdir(parents=True)
        for name, blob in (("corpus.jsonl", corpus), ("queries.jsonl", queries), ("qrels/test.tsv", qrels)):
            if blob is not None:
                (folder / name).write_bytes((b"query-id\tcorpus-id\tscore\n" if header and "qrels" in name
                                             else b"") + blob)
        try:
            docs = load_beir_corpus(folder)
            goldens = load_beir_goldens(folder, "test", {d.doc_id for d in docs})
        except InvalidInput as exc:
            for d in exc.defects:
                assert Path(d.file).is_relative_to(folder)
                str(d).encode("utf-8")
            return
        assert len({d.doc_id for d in docs}) == len(docs)
        goldens_hash(goldens)
        assert all(g.query.strip() and g.relevant_doc_ids for g in goldens)

    assert run("BEIR loader", prop) >= 300
