"""Reader for Bayesian networks in the BIF (Bayesian Interchange Format) text format.

Only discrete networks are supported, as distributed by the bnlearn repository::

    variable smoke {
      type discrete [ 2 ] { yes, no };
    }
    probability ( lung | smoke ) {
      (yes) 0.1, 0.9;
      (no) 0.01, 0.99;
    }

A probability block lists either one row per parent configuration (``(v1, v2) p1, p2;``,
optionally with a ``default p1, p2;`` row for the configurations not listed) or a single
``table`` of every number. Following the BIF specification, a ``table`` lists the numbers
in row-major order over ``(child, parent_1, ..., parent_k)``: the child varies slowest and
the last parent fastest. ``//`` and ``/* */`` comments and ``property`` entries are
ignored; anything else outside the blocks is an error.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import math
import re
from os import PathLike

import numpy as np

from dpgm.errors import DataError
from dpgm.models.base import Release
from dpgm.models.bayesian_network import BayesianNetwork

#: the network block's properties in which dpgm keeps what BIF has no place for: the
#: network's record count and its release (the ledger, base64 JSON: BIF has no escapes)
_PROPERTY = re.compile(r"\s*property\s+dpgm-(?P<key>total|release)\s+(?P<value>\S+)\s*$")

__all__ = ["BayesianNetwork", "parse_bif", "read_bif", "to_bif", "write_bif"]

_ROW_TOLERANCE = 1e-3  # a CPT row may miss 1 by this much (files round to ~8 digits)

_NAME = r'"[^"\n]*"|[^\s,|(){};\[\]"]+'
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_BLOCK = re.compile(
    rf"""
    (?P<kind>network|variable)\s+(?P<name>{_NAME})\s*
        \{{(?P<body>(?:[^{{}}]|\{{[^{{}}]*\}})*)\}}
    | probability\s*\((?P<vars>[^()]*)\)\s*\{{(?P<table>[^{{}}]*)\}}
    """,
    re.VERBOSE,
)
_TYPE = re.compile(
    r"^\s*type\s+discrete\s*\[\s*(?P<size>[^\]]*?)\s*\]\s*\{(?P<states>[^{}]*)\}\s*$", re.DOTALL
)
_TOKEN = re.compile(_NAME)
_ROW = re.compile(r"^\s*\((?P<config>[^()]*)\)(?P<values>.*)$", re.DOTALL)
_KEYWORD_ROW = re.compile(r"^\s*(?P<key>table|default)\b(?P<values>.*)$", re.DOTALL)
_SEPARATORS = re.compile(r"[\s,]+")


def _unquote(token: str) -> str:
    return token[1:-1] if len(token) >= 2 and token[0] == token[-1] == '"' else token


# -- parsing ------------------------------------------------------------------------------
class _Source:
    """Text with comments blanked out (line numbers kept), for error messages."""

    def __init__(self, text: str, origin: str):
        self.origin = origin
        self.text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)

    def line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def error(self, pos: int, message: str) -> DataError:
        return DataError(f"{self.origin}, line {self.line(pos)}: {message}")


def _numbers(src: _Source, pos: int, text: str, what: str) -> np.ndarray:
    tokens = [t for t in _SEPARATORS.split(text.strip()) if t]
    if not tokens:
        raise src.error(pos, f"{what}: no probabilities given")
    try:
        values = np.array([float(t) for t in tokens])
    except ValueError:
        bad = next(t for t in tokens if not _is_float(t))
        raise src.error(pos, f"{what}: {bad!r} is not a number") from None
    if not np.all(np.isfinite(values)) or (values < 0).any():
        raise src.error(pos, f"{what}: probabilities must be finite and non-negative")
    return values


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _parse_variable(src: _Source, start: int, name: str, body: str, body_pos: int):
    states = None
    for entry in _entries(body, body_pos):
        pos, text = entry
        if re.match(r"\s*property\b", text):
            continue
        m = _TYPE.match(text)
        if m is None:
            raise src.error(
                pos,
                f"variable {name!r}: expected 'type discrete [ n ] {{ s1, s2, ... }};', "
                f"got {text.strip()!r}",
            )
        if states is not None:
            raise src.error(pos, f"variable {name!r} has two type declarations")
        states = [_unquote(t) for t in _TOKEN.findall(m.group("states"))]
        size = m.group("size")
        if not size.isdigit() or int(size) != len(states):
            raise src.error(
                pos,
                f"variable {name!r} declares [ {size} ] states but lists {len(states)}: {states}",
            )
        if not states:
            raise src.error(pos, f"variable {name!r} has no states")
        if len(set(states)) != len(states):
            raise src.error(pos, f"variable {name!r} lists a state twice: {states}")
    if states is None:
        raise src.error(start, f"variable {name!r} has no 'type discrete' declaration")
    return states


def _entries(body: str, body_pos: int) -> list[tuple[int, str]]:
    """Split a block body at top-level ';' into (position, text) entries."""
    out = []
    depth = 0
    begin = 0
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            out.append((body_pos + begin, body[begin:i]))
            begin = i + 1
    rest = body[begin:]
    if rest.strip():
        offset = len(rest) - len(rest.lstrip())
        raise _MissingSemicolon(body_pos + begin + offset, rest.strip())
    # report each entry at its first non-blank character
    return [(p + len(t) - len(t.lstrip()), t) for p, t in out if t.strip()]


class _MissingSemicolon(Exception):
    def __init__(self, pos: int, text: str):
        self.pos, self.text = pos, text


def _parse_probability(src, pos, header, body, body_pos, states) -> tuple[str, tuple, np.ndarray]:
    names = [_unquote(t) for t in _TOKEN.findall(header)]
    if not names:
        raise src.error(pos, "probability block names no variable")
    for v in names:
        if v not in states:
            raise src.error(pos, f"probability block mentions undeclared variable {v!r}")
    child, parents = names[0], tuple(names[1:])
    if len(set(names)) != len(names):
        raise src.error(pos, f"probability block for {child!r} lists a variable twice: {names}")
    psizes = tuple(len(states[p]) for p in parents)
    k = len(states[child])
    cpd = np.full((*psizes, k), np.nan)
    default = None
    seen_table = False
    row_pos: dict[tuple[int, ...], int] = {}  # where each row was given, for errors
    for epos, text in _entries(body, body_pos):
        if re.match(r"\s*property\b", text):
            continue
        row = _ROW.match(text)
        key = _KEYWORD_ROW.match(text)
        if key is not None and key.group("key") == "table":
            values = _numbers(src, epos, key.group("values"), f"table of {child!r}")
            if values.size != cpd.size:
                raise src.error(
                    epos,
                    f"table of {child!r} has {values.size} probabilities, expected {cpd.size} "
                    f"({k} states x {int(np.prod(psizes))} parent configurations)",
                )
            # BIF order: row-major over (child, *parents); move the child axis last
            cpd = np.moveaxis(values.reshape((k, *psizes)), 0, -1).copy()
            seen_table = True
        elif key is not None:  # default row
            default = _numbers(src, epos, key.group("values"), f"default row of {child!r}")
            if default.size != k:
                raise src.error(
                    epos, f"default row of {child!r} has {default.size} probabilities, expected {k}"
                )
        elif row is not None:
            if not parents:
                raise src.error(
                    epos, f"{child!r} has no parents, so its rows need the 'table' keyword"
                )
            config = [_unquote(t) for t in _TOKEN.findall(row.group("config"))]
            if len(config) != len(parents):
                raise src.error(
                    epos,
                    f"row ({', '.join(config)}) of {child!r} gives {len(config)} parent "
                    f"values, expected {len(parents)} for {list(parents)}",
                )
            index = []
            for p, value in zip(parents, config, strict=True):
                if value not in states[p]:
                    raise src.error(
                        epos,
                        f"row of {child!r}: {value!r} is not a state of {p!r} (states {states[p]})",
                    )
                index.append(states[p].index(value))
            where = f"row ({', '.join(config)}) of {child!r}"
            values = _numbers(src, epos, row.group("values"), where)
            if values.size != k:
                raise src.error(epos, f"{where} has {values.size} probabilities, expected {k}")
            if not np.isnan(cpd[tuple(index)]).all():
                raise src.error(epos, f"{where} is given twice")
            cpd[tuple(index)] = values
            row_pos[tuple(index)] = epos
        else:
            raise src.error(
                epos, f"cannot read {text.strip()!r} in the probability block of {child!r}"
            )
    missing = np.isnan(cpd).any(axis=-1)
    if missing.any():
        if default is not None:
            cpd[missing] = default
        elif seen_table or not parents:
            raise src.error(pos, f"probability block for {child!r} has no table")
        else:
            first = np.argwhere(missing)[0]
            config = ", ".join(states[p][i] for p, i in zip(parents, first, strict=True))
            raise src.error(pos, f"probability block for {child!r} has no row for ({config})")
    sums = cpd.sum(axis=-1)
    bad = np.abs(sums - 1.0) > _ROW_TOLERANCE
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0]) if parents else ()
        config = ", ".join(states[p][i] for p, i in zip(parents, first, strict=True))
        raise src.error(
            row_pos.get(first, pos),
            f"probabilities of {child!r} given ({config}) sum to {sums[tuple(first)]:g}, not 1",
        )
    return child, parents, rounded_rows(cpd)


def _quick_tokens(header: str, body: str, states: dict[str, list[str]],
                  codes: dict[str, dict[str, int]]) -> tuple | None:
    """A well-formed probability block's parts, unparsed numbers included: (child,
    parents, parent sizes, child size, the rows' parent codes (flat; None for a
    ``table``), the numbers as text); None where anything is unusual (quotes,
    ``default``, comments, a missing ';'...): :func:`_parse_probability` then reads the
    block again and names the problem."""
    names = [_unquote(t) for t in _TOKEN.findall(header)]
    if not names or len(set(names)) != len(names) or any(v not in states for v in names):
        return None
    if any(mark in body for mark in '{"') or "property" in body or "default" in body:
        return None
    child, parents = names[0], tuple(names[1:])
    k = len(states[child])
    psizes = tuple(len(states[p]) for p in parents)
    index = None
    if parents:
        rows = _QUICK_ROW.findall(body)
        if len(rows) != body.count(";") or body.rstrip()[-1:] not in ("", ";"):
            return None
        tokens = ",".join(config for config, _ in rows).replace(",", " ").split()
        if len(tokens) != len(rows) * len(parents):
            return None
        try:
            index = [table[t] for table, t in zip([codes[p] for p in parents] * len(rows),
                                                  tokens)]
        except KeyError:
            return None
        numbers = " ".join(values for _, values in rows).replace(",", " ").split()
    else:
        table = _QUICK_TABLE.fullmatch(body)
        if table is None:
            return None
        numbers = table.group(1).replace(",", " ").split()
    if len(numbers) != math.prod(psizes) * k:
        return None
    return child, parents, psizes, k, index, numbers


def _quick_cpds(blocks: list[tuple]) -> list[np.ndarray] | None:
    """The CPDs of well-formed blocks (:func:`_quick_tokens`), their numbers parsed,
    checked and normalised as :func:`rounded_rows` does in one pass over all of them;
    None where a number, a row's sum or a repeated row calls for the careful reader.
    Most files are well formed; reading row by row, block by block, made loading slow."""
    if not blocks:
        return []
    try:
        values = np.array([t for block in blocks for t in block[5]], dtype=float)
    except ValueError:
        return None
    if not np.isfinite(values).all() or (values < 0).any():
        return None
    sizes = np.repeat(np.array([b[3] for b in blocks], dtype=np.intp),
                      np.array([len(b[5]) // b[3] for b in blocks], dtype=np.intp))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    # each row summed as a CPD's last axis is (reduceat adds in another order, which moves
    # the last bit of a normalised row): rows of one size at a time
    sums = np.empty(sizes.size)
    for k in np.unique(sizes):
        rows = np.flatnonzero(sizes == k)
        sums[rows] = values[starts[rows, None] + np.arange(k)].sum(axis=-1)
    if (np.abs(sums - 1.0) > _ROW_TOLERANCE).any():
        return None
    values = values / np.repeat(_row_divisors(sums, sizes), sizes)
    cpds, offset = [], 0
    for _, parents, psizes, k, index, numbers in blocks:
        part = values[offset: offset + len(numbers)]
        offset += len(numbers)
        if not parents:
            cpds.append(part)
            continue
        n, strides = len(parents), [math.prod(psizes[j + 1:]) for j in range(len(parents))]
        flat = [sum(index[r * n + j] * strides[j] for j in range(n))
                for r in range(len(index) // n)]
        if flat == list(range(len(flat))):  # rows in the CPD's own order: a view
            cpds.append(part.reshape((*psizes, k)))
            continue
        if len(set(flat)) != len(flat):
            return None  # a row given twice
        cpd = np.empty((*psizes, k))
        cpd.reshape(-1, k)[flat] = part.reshape(-1, k)
        cpds.append(cpd)
    return cpds


_QUICK_ROW = re.compile(r"\s*\(([^()]*)\)([^;()]*);")
_QUICK_VARIABLE = re.compile(r"\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^{}\"]*)\}\s*;\s*")
_QUICK_TABLE = re.compile(r"\s*table\s([^;]*);\s*")


def rounded_rows(cpd: np.ndarray) -> np.ndarray:
    """A CPD read from a file, its rows (last axis) normalised where they miss 1.

    Rows already summing to 1 within rounding are kept as written, so that what a writer
    wrote reads back bit for bit; the others (files round to ~8 digits) are normalised.
    """
    return cpd / _row_divisors(cpd.sum(axis=-1), cpd.shape[-1])[..., None]


def _row_divisors(sums: np.ndarray, sizes) -> np.ndarray:
    """What each row is divided by: 1 (x / 1.0 is x) where its ``sums`` is 1 within the
    rounding of ``sizes`` additions, else its sum."""
    exact = np.abs(sums - 1.0) <= 4 * np.finfo(float).eps * np.asarray(sizes)
    return np.where(exact, 1.0, sums)


def parse_bif(text: str, origin: str = "<string>") -> BayesianNetwork:
    """Parse BIF text (see the module docstring); errors name ``origin`` and the line."""
    src = _Source(text, origin)
    body_text = src.text
    states: dict[str, list[str]] = {}
    blocks: list[tuple[int, re.Match]] = []
    name = ""
    kept: dict = {}
    pos = 0
    while True:
        skip = re.compile(r"\s*").match(body_text, pos)
        pos = skip.end()
        if pos >= len(body_text):
            break
        m = _BLOCK.match(body_text, pos)
        if m is None:
            snippet = body_text[pos:].split("\n", 1)[0].strip()
            raise src.error(
                pos, f"expected a 'network', 'variable' or 'probability' block, got {snippet!r}"
            )
        blocks.append((pos, m))
        pos = m.end()
    try:
        for start, m in blocks:
            if m.group("kind") == "network":
                name = _unquote(m.group("name"))
                kept = _network_properties(src, m.group("body"), m.start("body"))
            elif m.group("kind") == "variable":
                var = _unquote(m.group("name"))
                if var in states:
                    raise src.error(start, f"variable {var!r} is declared twice")
                quick = _QUICK_VARIABLE.fullmatch(m.group("body"))
                found = quick and quick.group(2).replace(",", " ").split()
                if found and quick.group(1) == str(len(found)) and len(set(found)) == len(found):
                    states[var] = found
                else:  # anything unusual: read again, naming the problem
                    states[var] = _parse_variable(src, start, var, m.group("body"),
                                                  m.start("body"))
        parents: dict[str, tuple[str, ...]] = {}
        cpds: dict[str, np.ndarray] = {}
        codes = {v: {s: i for i, s in enumerate(names)} for v, names in states.items()}
        probability = [(start, m) for start, m in blocks if m.group("kind") is None]
        tokens = [_quick_tokens(m.group("vars"), m.group("table"), states, codes)
                  for _, m in probability]
        # all blocks at once where all are well formed; else one by one, the unusual
        # ones by the careful reader
        quick = _quick_cpds(tokens) if all(tokens) else None
        for n, (start, m) in enumerate(probability):
            if quick is not None:
                child, pars, cpd = tokens[n][0], tokens[n][1], quick[n]
            else:
                one = _quick_cpds([tokens[n]]) if tokens[n] else None
                child, pars, cpd = (tokens[n][0], tokens[n][1], one[0]) if one else (
                    _parse_probability(src, start, m.group("vars"), m.group("table"),
                                       m.start("table"), states))
            if child in cpds:
                raise src.error(start, f"a second probability block for {child!r}")
            parents[child], cpds[child] = pars, cpd
    except _MissingSemicolon as exc:
        raise src.error(exc.pos, f"missing ';' after {exc.text!r}") from None
    network = assemble(origin, states, parents, cpds, name, "probability block")
    network.total = kept.get("total", network.total)
    network.release = kept.get("release")
    return network


def _network_properties(src: _Source, body: str, body_pos: int) -> dict:
    """dpgm's properties of the network block (others are ignored, as BIF allows)."""
    kept: dict = {}
    for pos, text in _entries(body, body_pos):
        m = _PROPERTY.match(text)
        if m is None:
            continue
        value = _unquote(m.group("value"))
        try:
            if m.group("key") == "total":
                kept["total"] = float(value)
                if not math.isfinite(kept["total"]) or kept["total"] <= 0:
                    raise ValueError(value)
            else:
                kept["release"] = Release.from_json(json.loads(base64.b64decode(
                    value.encode("ascii"), altchars=b"-_", validate=True)))
        except (ValueError, binascii.Error, UnicodeError, AttributeError, TypeError):
            raise src.error(pos, f"the property dpgm-{m.group('key')} is not readable") from None
    return kept


def assemble(
    origin: str,
    states: dict[str, list[str]],
    parents: dict[str, tuple[str, ...]],
    cpds: dict[str, np.ndarray],
    name: str,
    block: str,
) -> BayesianNetwork:
    """The network of a parsed file, in its declaration order; ``block`` names what each
    variable needs (for the error when one has none)."""
    if not states:
        raise DataError(f"{origin}: no variables declared")
    missing = [v for v in states if v not in cpds]
    if missing:
        raise DataError(f"{origin}: no {block} for {missing}")
    network = BayesianNetwork(
        list(states), states, {v: parents[v] for v in states}, {v: cpds[v] for v in states}, name
    )
    network.topological_order()  # raises on a directed cycle
    return network


def read_bif(path: str | PathLike[str]) -> BayesianNetwork:
    """Read a discrete Bayesian network from a ``.bif`` file (or a gzip of one,
    ``.bif.gz``), in UTF-8 or else Latin-1."""
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # BIF names no encoding and older files are often Latin-1, which decodes any
        # bytes: a file that is not UTF-8 is read as Latin-1
        text = raw.decode("latin-1")
    # newlines as text mode reads them: \r\n and \r become \n
    return parse_bif(text.replace("\r\n", "\n").replace("\r", "\n"), str(path))


_PLAIN_NAME = re.compile(r'[^\s,|(){};\[\]"]+')


def _name(text: str) -> str:
    """A variable or state name as BIF writes it: quoted unless it is one plain token."""
    if _PLAIN_NAME.fullmatch(text):
        return text
    if '"' in text or "\n" in text:
        raise DataError(f"the name {text!r} cannot be written to BIF (a quote or a newline)")
    return f'"{text}"'


def to_bif(network: BayesianNetwork) -> str:
    """The network as BIF text that :func:`parse_bif` reads back exactly (``repr`` floats)."""
    network.check()
    kept = []
    if network.total != 1.0:  # a learner's noisy record count
        kept.append(f"  property dpgm-total {network.total!r};")
    if network.release is not None:
        encoded = base64.urlsafe_b64encode(json.dumps(network.release.to_json()).encode())
        kept.append(f'  property dpgm-release "{encoded.decode("ascii")}";')
    lines = [f"network {_name(network.name or 'unknown')} {{", *kept, "}"]
    for v in network.variables:
        states = ", ".join(_name(str(s)) for s in network.states[v])
        lines += [
            f"variable {_name(v)} {{",
            f"  type discrete [ {len(network.states[v])} ] {{ {states} }};",
            "}",
        ]
    for v in network.variables:
        parents = network.parents[v]
        header = _name(v) + (" | " + ", ".join(_name(p) for p in parents) if parents else "")
        lines.append(f"probability ( {header} ) {{")
        cpd = np.asarray(network.cpds[v], dtype=np.float64)
        if not parents:
            lines.append("  table " + ", ".join(repr(float(x)) for x in cpd) + ";")
        else:
            table = cpd.reshape(-1, cpd.shape[-1])
            configs = np.ndindex(*cpd.shape[:-1])
            for config, row in zip(configs, table, strict=True):
                names = ", ".join(_name(network.states[p][i]) for p, i in zip(parents, config))
                lines.append(f"  ({names}) " + ", ".join(repr(float(x)) for x in row) + ";")
        lines.append("}")
    return "\n".join(lines) + "\n"


def write_bif(network: BayesianNetwork, path: str | PathLike[str]) -> None:
    """Write the network as a ``.bif`` file, whole or not at all."""
    from dpgm.files import atomic_write

    text = to_bif(network)
    with atomic_write(path) as handle:
        handle.write(text)
