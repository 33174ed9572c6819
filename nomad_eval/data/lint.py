"""Golden lint: goldens that cannot discriminate a good answer from a bad one. Findings are warnings."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nomad_eval.base.patterns import TIMEOUT_S, search, shown
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden
from nomad_eval.data.lint_sources import source_messages

REFUSALS = (
    "I don't have information about that in the available documents.",
    "I do not have that information.",
    "I don't know.",
    "Sorry, I cannot answer that.",
)
# Words so common that a pattern made of one of them passes almost any answer.
GENERIC = frozenset("""
time times use used water make made way day days hour hours minute minutes can will should must may not all any
some more most less good well need needs keep safe safety first one two three people person thing things part
place work first also only just very much many long short high low small large big right left yes no ok true
""".split())
_PLAIN_WORD = re.compile(r"^(?:\\b)?([A-Za-z]+)(?:\\b)?$")  # a word, optionally between \b
_BARE_NUMBER = re.compile(r"^(?:\\b)?\d+(?:[.,]\d+)?(?:\\b)?$")
# Common words that hold short fragments ("mid" in "humid", "ice" in "advice"): a pattern without word
# boundaries that matches inside one of them passes (or, in mustNotInclude, fails) answers that never say it.
COMMON_WORDS = tuple("""
humid amid middle timid pyramid admit stand band other then thin this within notice advice price rice nice office
service device choice police justice practice shot photo hold cold told old gold bold fold drywall between wheat
theater page usage storage message image cattle location mint mine minute mining famine administer flour four hour
pour your often tent tension written done gone none someone stone phone weight height eight canine slow flow allow
below yellow pillow thigh wash flash cash rash asphalt boil soil foil coil cannot scan candle panic span company spot
potato potential solid valid slide product produce bored stored covered hundred tired required ratio ration operation
station hiccup cupboard team steam instead start part heart chart smart card care scar carbon vinegar sugar more before
store core score shore water later after want plant important pants legal pint point paint pinch winch capital
material general several metal total animal normal signal hospital sweater greater theatre
""".split())
INFLECTIONS = frozenset(("s", "es", "d", "ed", "ing", "er", "ers", "ly"))
# Sentences that negate a claim: a mustNotInclude pattern matching one fails an answer that warns against it.
NEGATIONS = ("Do not {}.", "Never {}.")
# Verbs a mustNotInclude phrase opens with when it names a harmful action ("use ice", "pop the blister").
ACTIONS = frozenset("""
use apply put give drink eat pour add boil cut rub remove pop wrap cover leave store keep heat cook freeze thaw burn
break move lift run connect touch mix take wash soak squeeze drain throw discard seal open close bury dilute induce tie
loosen massage shake warm cool try place brush suck drag reuse refill refreeze ignite light smoke spray wipe scrub
dry flush rinse chew swallow inject pump dig fill cross walk climb enter drive sit lie sleep stay wait call send switch
turn plug unplug start stop fire shoot feed water plant sow prune spread sprinkle scatter stack pile hang fold mount
install operate charge discharge reheat microwave fry bake roast grill pickle ferment salt cure taste smell sniff inhale
breathe vent block uncover expose stare approach handle pick carry drop kick hit pull push tighten replace clean
sterilize purify filter treat combine share ignore skip delay rely trust exceed overload overfill overcharge submerge
immerse bathe swim wade wear sharpen stir pack unpack fasten release cap plunge hose trim split chop saw drill hammer
""".split())
_GROUP = re.compile(r"\((?:\?:)?([^()|]*)(?:\|[^()]*)?\)")
_META = re.compile(r"[\\\[\](){}*+?|^$.]")


def _top_level_branches(pattern: str) -> list[str]:
    """The pattern split at `|` outside groups and classes (what the regex engine alternates between)."""
    out, depth, cls, cur, esc = [], 0, False, "", False
    for ch in pattern:
        if esc:
            cur, esc = cur + ch, False
            continue
        if ch == "\\":
            cur, esc = cur + ch, True
            continue
        if cls:
            cls = ch != "]"
        elif ch == "[":
            cls = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    return [*out, cur]


def _sample(pattern: str) -> str | None:
    """A text the pattern matches when it is a phrase (groups take their first branch), else None."""
    text = pattern.replace("\\b", "").strip("^$")
    text = re.sub(r"(?<=\w)\?", "", text)  # optional letters ("colou?r") dropped
    while True:
        nxt = _GROUP.sub(lambda m: m.group(1), text)
        if nxt == text:
            break
        text = nxt
    text = text.replace("\\s+", " ").replace("\\s", " ").replace("\\-", "-")
    if not text.strip() or _META.search(text) or not search(pattern, text):
        return None
    return text.strip()


UNSOURCED = "unsourced"  # a mustInclude that none of its golden's relevant documents holds
QUALITY = "quality"      # a golden that cannot tell a good answer from a bad one


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | None
    golden_id: str
    message: str
    kind: str = QUALITY

    def __str__(self) -> str:
        return f"{self.file}:{self.line} [{self.golden_id}]: {self.message}"


def golden_lines(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            gid = json.loads(line).get("id")
        except (ValueError, AttributeError):
            continue
        if isinstance(gid, str):
            out.setdefault(gid, n)
    return out


class _DocHits:
    """How many documents a pattern matches, when that is more than half of them; else any smaller number.

    This was goldens x patterns x documents regex searches. A pattern is counted once however many goldens
    use it, and counting stops as soon as the rest of the documents could no longer take it past half: only
    a pattern that warns needs its exact count, for the message.
    """

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.counted: dict[str, int] = {}
        self.timed_out: dict[str, int] = {}  # documents a pattern's search gave up on: counted, never "no match"

    def __call__(self, p: str) -> int:
        if p not in self.counted:
            hits = 0
            for i, t in enumerate(self.texts):
                found = search(p, t)
                if found is None:
                    self.timed_out[p] = self.timed_out.get(p, 0) + 1
                hits += bool(found)
                if (hits + len(self.texts) - i - 1) * 2 <= len(self.texts):
                    break
            self.counted[p] = hits
        return self.counted[p]


def lint(goldens: list[Golden], docs: list[Document], path: Path) -> list[Finding]:
    lines = golden_lines(path)
    texts = [d.text for d in docs if not d.distractor]
    ids = {g.id for g in goldens}
    tag_counts = Counter(t for g in goldens for t in g.tags)
    # The corpus's own words, most frequent first: answers quote them, so a fragment inside one passes wrongly.
    vocabulary = [w for w, _ in Counter(re.findall(r"[a-z]{3,}", "\n".join(texts).lower())).most_common()]
    doc_hits = _DocHits(texts)
    by_id = {d.doc_id: d for d in docs}
    out: list[Finding] = []
    for g in goldens:
        messages = [m for p in g.must_include for m in _include_messages(g, p, doc_hits)]
        messages += _inside_word_messages(g, vocabulary)
        messages += _attack_messages(g)
        messages += _negation_messages(g)
        messages += _suite_messages(g, ids, tag_counts)
        out += [Finding(str(path), lines.get(g.id), g.id, msg) for msg in messages]
        out += [Finding(str(path), lines.get(g.id), g.id, msg, UNSOURCED) for msg in source_messages(g, by_id)]
    return out


def _include_messages(g: Golden, p: str, doc_hits: _DocHits) -> list[str]:
    """Why mustInclude pattern `p` could pass an answer that does not give the golden's answer."""
    out = []
    word = _PLAIN_WORD.match(p)
    if word and word.group(1).lower() in GENERIC:
        out.append(f"mustInclude {shown(p)} is one common word: almost any answer passes; pin it to a figure or phrase")
    if search(p, g.query):  # earlier turns may state a figure on purpose (history-retention goldens)
        out.append(f"mustInclude {shown(p)} matches the question itself: an answer that repeats it passes")
    if search(p, ""):
        out.append(f"mustInclude {shown(p)} matches an empty answer (what the mock model gives without context)")
    refusal = next((r for r in REFUSALS if search(p, r)), None)
    if refusal:
        out.append(f"mustInclude {shown(p)} matches a refusal ({refusal!r}): declining would pass")
    bare = _bare_branch(p)
    if bare is not None:
        out.append(f"mustInclude {shown(p)}: '|' splits the whole pattern, so its bare branch {bare!r} passes any "
                   f"answer containing {bare!r}; group the alternatives, e.g. '(20|30) years'")
    hits, total = doc_hits(p), len(doc_hits.texts)
    if slow := doc_hits.timed_out.get(p, 0) + (search(p, g.query) is None):
        out.append(f"mustInclude {p!r} ran past the {TIMEOUT_S:g} s match limit on {slow} text(s): its result there "
                   "is unknown, not a miss; rewrite it without nested repeats")
    if total and total >= 4 and hits / total > 0.5:
        if _BARE_NUMBER.match(p):
            out.append(f"mustInclude {shown(p)} is a bare number found in {hits} of {total} documents (inside "
                       "other figures too): any answer quoting the corpus passes; pin it to its unit")
        else:
            out.append(f"mustInclude {shown(p)} matches {hits} of {total} documents: it cannot tell them apart")
    return out


def _inside_word_messages(g: Golden, vocabulary: list[str]) -> list[str]:
    out = []
    for key, patterns in (("mustInclude", g.must_include), ("mustNotInclude", g.must_not_include)):
        for p in patterns:
            inside = _inside_word(p, vocabulary)
            if inside:
                out.append(f"{key} {shown(p)} matches inside the word {inside!r}: add \\b word boundaries")
    return out


def _attack_messages(g: Golden) -> list[str]:
    out = []
    for p in g.attack.success if g.attack else []:
        # A success pattern a decline or a bare echo of the question satisfies counts a resisted attack.
        refusal = next((r for r in ("", g.query, *REFUSALS) if search(p, r)), None)
        if refusal is not None:
            out.append(f"attack.success {shown(p)} matches {refusal or 'an empty answer'!r}: an answer that resists "
                       "the attack would count as attacked")
    return out


def _negation_messages(g: Golden) -> list[str]:
    out = []
    for p in g.must_not_include:
        negated = _matches_negation(p)
        if negated:
            out.append(f"mustNotInclude {shown(p)} matches the correct negated answer {negated!r}: an answer that "
                       "warns against it fails; match the affirmative claim only (e.g. a (?<!not ) lookbehind)")
    return out


def _suite_messages(g: Golden, ids: set[str], tag_counts: Counter[str]) -> list[str]:
    """What the golden lacks beside the rest of the suite: an acronym's spelled-out twin, a tag's second question."""
    out = []
    if "acronym" in g.tags and "acronym-control" not in g.tags and not _SPELLED.search(g.id) \
            and not _has_twin(g.id, ids):
        acronym = _ACRONYM.match(g.id)
        upstream = (acronym.group(1) if acronym else _stem(g.id)) + "-spelled-01"
        out.append(f"acronym question without its spelled-out twin (expected id {g.id + '-spelled'!r} "
                   f"or {upstream!r})")
    out += [f"tag {t!r} is used once in the suite: a per-tag mean of one question is noise"
            for t in g.tags if tag_counts[t] == 1]
    return out


_SPELLED = re.compile(r"-spelled(?:-\d+)?$")
_NUMBERED = re.compile(r"^(.*)-(\d+)$")
_ACRONYM = re.compile(r"^(.*)-acronym(?:-\d+)?$")


def _stem(gid: str) -> str:
    m = _NUMBERED.match(gid)
    return m.group(1) if m else gid


def _has_twin(gid: str, ids: set[str]) -> bool:
    """Ours: `<id>-spelled`; upstream's: `<stem>-spelled-01` (any number), for `<stem>` or `<stem>-NN`, and
    `<base>-acronym-NN` beside `<base>-spelled-NN` (NOMAD's core suite names its twins so)."""
    stems = [re.escape(gid), re.escape(_stem(gid))]
    acronym = _ACRONYM.match(gid)
    if acronym:
        stems.append(re.escape(acronym.group(1)))
    twin = re.compile(rf"^(?:{'|'.join(stems)})-spelled(?:-\d+)?$")
    return any(twin.match(i) for i in ids)


def _bare_branch(pattern: str) -> str | None:
    """A top-level branch that is a bare number or fragment beside a branch of several words (`20|30 years`)."""
    branches = _top_level_branches(pattern)
    if len(branches) < 2 or not any(re.search(r"\s|\\s", b.strip()) for b in branches):
        return None
    for b in branches:
        core = b.strip().replace("\\b", "")
        if any(core in other for other in branches if other is not b):
            continue  # `channel 19|19`: the bare branch is meant to pass on its own
        if core and not re.search(r"\s|\\s", core) and (re.fullmatch(r"\d+(?:[.,]\d+)?", core) or len(core) <= 3):
            return b
    return None


def _inside_word(pattern: str, vocabulary: Sequence[str] = ()) -> str | None:
    """A word of the corpus (or a common word) that a short boundary-less fragment matches inside of."""
    word = _PLAIN_WORD.match(pattern)
    if not word or len(word.group(1)) > 5:
        return None
    core = word.group(1).lower()
    left, right = pattern.startswith("\\b"), pattern.endswith("\\b")
    if left and right:
        return None

    # A fragment of four letters or more, or one the corpus uses on its own, is a word its inflections may carry.
    is_word = len(core) >= 4 or core in vocabulary

    def inside(w: str) -> bool:  # substring tests, not regex: this runs over the whole corpus vocabulary
        if w == core or core not in w or (is_word and w.startswith(core) and w[len(core):] in INFLECTIONS):
            return False  # "wire" in "wired" is the same word; "mid" in "humid" and "spr" in "spring" are not
        return w.startswith(core) if left else w.endswith(core) if right else True

    return next((w for w in (*COMMON_WORDS, *vocabulary) if inside(w)), None)


def _matches_negation(pattern: str) -> str | None:
    """A negated sentence the pattern matches, tried for each top-level branch (`\\buse ice\\b|apply ice`)."""
    for branch in _top_level_branches(pattern):
        if "(?<!" in branch or re.search(r"\b(?:not|never|don'?t|no)\b", branch, re.IGNORECASE):
            continue  # the author already told the claim from its negation
        sample = _sample(branch)
        if sample is None or sample.split()[0].lower() not in ACTIONS:
            continue  # only an action is what a correct answer tells the reader not to do
        negated = next((s for s in (n.format(sample) for n in NEGATIONS) if search(pattern, s)), None)
        if negated:
            return negated
    return None
