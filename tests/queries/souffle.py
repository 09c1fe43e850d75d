"""Soufflé programs as Datomic rules, for the conformance suite (``test_souffle_programs``).

A Soufflé test case is a Datalog program (``NAME.dl``), its input facts (``REL.facts``,
tab-separated) and the output Soufflé computed (``REL.csv``). ``load`` reads one and
translates the subset this engine shares with Soufflé, or raises ``Unsupported`` naming
what it does not translate (records, ADTs, aggregates, components, equivalence
relations, floats, most functors):

* a relation ``R`` of arity k is stored as one entity per fact with attributes
  ``:R/c0`` .. ``:R/c{k-1}`` (longs for numbers, strings for symbols), and called as the
  rule ``(r_R ?c0 ... )``, whose first clause reads those attributes;
* a Soufflé rule becomes one Datomic rule per disjunct of its body: atoms are rule calls,
  ``!R(..)`` is ``(not (r_R ..))`` (its ``_`` local to the ``not``), ``x < y`` a predicate,
  ``x = e`` a binding (``[(+ ?y 1) ?x]``, ``[(identity ?y) ?x]``) or an equality test, and
  a head's constants and expressions are bound in the body;
* ``/`` and ``%`` on numbers are C's (``quot``, ``rem``), ``cat`` is ``str``, ``strlen``
  is ``count``.

The translation is the test's only code; the answers it is compared with are Soufflé's.

>>> p = parse_program('.decl e(a:number, b:number) .decl p(a:number, b:number) .output p '
...                   'e(1,2). e(2,3). p(x,y) :- e(x,y). p(x,z) :- p(x,y), e(y,z).')
>>> sorted(p.facts["e"]), len(p.rules)
([(1, 2), (2, 3)], 2)
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

__all__ = ["Unsupported", "Program", "load", "parse_program"]


class Unsupported(Exception):
    """A construct the translation leaves out."""


TOKEN = re.compile(r'''
 (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
|(?P<str>"(?:[^"\\\n]|\\.)*")
|(?P<num>0x[0-9a-fA-F]+|0b[01]+|\d+\.\d+(?:[eE][-+]?\d+)?|\d+u?)
|(?P<dir>\.[a-z_]+)
|(?P<id>[A-Za-z_?][A-Za-z0-9_?]*)
|(?P<op>:-|<=|>=|!=|<:|[(),.:;!<>=+\-*/%^\[\]{}|&$@#~])
''', re.S | re.X)

RELOPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "not=", "=": "="}
ARITH = {"+": "+", "-": "-", "*": "*", "/": "quot", "%": "rem"}
FUNCTORS = {"cat": "str", "strlen": "count", "min": "min", "max": "max", "to_string": "str"}
QUALIFIERS = {"btree", "brie", "inline", "no_inline", "magic", "no_magic", "override",
              "overridable", "btree_delete"}
BASE_TYPES = {"number": "number", "unsigned": "number", "symbol": "symbol"}


def tokenize(text: str) -> list[tuple[str, str]]:
    if re.search(r"^\s*#", text, re.M):
        raise Unsupported("C preprocessor")
    out, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if m is None:
            raise Unsupported(f"token at {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    out.append(("end", ""))
    return out


@dataclasses.dataclass
class Var:
    name: str


@dataclasses.dataclass
class Const:
    value: int | str


@dataclasses.dataclass
class Op:
    op: str  # an ARITH operator, "neg", or a FUNCTORS name
    args: list


@dataclasses.dataclass
class Atom:
    rel: str
    args: list
    negated: bool = False


@dataclasses.dataclass
class Cmp:
    op: str
    left: object
    right: object


@dataclasses.dataclass
class Agg:
    kind: str  # count, sum, min, max
    target: object  # the aggregated expression (None for count)
    body: list
    outer: set = dataclasses.field(default_factory=set)  # shared with the rest of the rule


@dataclasses.dataclass
class Program:
    name: str
    types: dict = dataclasses.field(default_factory=dict)  # relation -> column base types
    facts: dict = dataclasses.field(default_factory=dict)  # relation -> set of tuples
    rules: list = dataclasses.field(default_factory=list)  # (head Atom, [literal])
    inputs: dict = dataclasses.field(default_factory=dict)  # relation -> (file name, delimiter)
    outputs: list = dataclasses.field(default_factory=list)
    expected: dict = dataclasses.field(default_factory=dict)  # relation -> set of tuples

    def schema(self) -> list[dict]:
        return [{":db/ident": f":{r}/c{i}", ":db/cardinality": ":db.cardinality/one",
                 ":db/valueType": ":db.type/long" if t == "number" else ":db.type/string"}
                for r, ts in self.types.items() for i, t in enumerate(ts)]

    def fact_maps(self, rel: str, rows) -> list[dict]:
        return [{f":{rel}/c{i}": v for i, v in enumerate(row)} for row in rows]

    def query(self, rel: str) -> str:
        vs = " ".join(f"?c{i}" for i in range(len(self.types[rel])))
        return f"[:find {vs} :in $ % :where (r_{rel} {vs})]"

    def rules_edn(self) -> str:
        out = []
        derived = {h.rel for h, _ in self.rules}
        for rel, ts in self.types.items():
            if rel in derived and not self.facts[rel] and rel not in self.inputs:
                continue  # derived only: no stored facts to read
            vs = [f"?c{i}" for i in range(len(ts))]
            out.append(f"[(r_{rel} {' '.join(vs)}) " + " ".join(f"[?f :{rel}/c{i} {v}]" for i, v in enumerate(vs)) + "]")
        from tests.queries.souffle_rules import rule_edn  # (it reads this module's syntax tree)
        for head, body in self.rules:
            out.append(rule_edn(head, body))
        return "[" + " ".join(out) + "]"


class _Parser:
    def __init__(self, text: str, name: str):
        self.toks, self.i, self.p = tokenize(text), 0, Program(name)
        self.aliases: dict[str, str] = dict(BASE_TYPES)
        self.anon = 0
        self.declared = {self.toks[j + 1][1] for j in range(len(self.toks) - 1) if self.toks[j][1] == ".decl"}

    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self, value: str | None = None) -> str:
        kind, v = self.toks[self.i]
        if value is not None and v != value:
            raise Unsupported(f"expected {value!r}, found {v!r}")
        self.i += 1
        return v

    def listed(self, item) -> list:
        """``item`` once, then again after each comma."""
        out = [item()]
        while self.peek()[1] == ",":
            self.take()
            out.append(item())
        return out

    def name(self) -> str:
        kind, v = self.peek()
        if kind != "id":
            raise Unsupported(f"expected a name, found {v!r}")
        return self.take()

    def program(self) -> Program:
        while self.peek()[0] != "end":
            kind, v = self.peek()
            if kind == "dir":
                getattr(self, "d_" + v[1:], self.d_unknown)()
            else:
                self.clause()
        for h, body in self.p.rules:
            for a in [h, *body]:
                if isinstance(a, Atom) and len(a.args) != len(self.p.types[a.rel]):
                    raise Unsupported(f"{a.rel} called with {len(a.args)} arguments")
        return self.p

    def d_unknown(self):
        raise Unsupported(f"directive {self.peek()[1]}")

    def d_pragma(self):
        self.take()
        while self.peek()[0] == "str":
            self.take()

    def d_type(self):
        self.take()
        t = self.name()
        op = self.take()
        if op not in ("<:", "="):
            raise Unsupported(f".type {t} {op}")
        if self.peek()[1] in ("[", "{") or self.peek(1)[1] == "{":
            raise Unsupported("record or ADT type")
        bases = {self.base(self.name())}
        while self.peek()[1] == "|":
            self.take()
            bases.add(self.base(self.name()))
        if len(bases) != 1:
            raise Unsupported("a union of number and symbol types")
        self.aliases[t] = bases.pop()

    def d_symbol_type(self):
        self.take()
        self.aliases[self.name()] = "symbol"

    def d_number_type(self):
        self.take()
        self.aliases[self.name()] = "number"

    def base(self, t: str) -> str:
        if t not in self.aliases:
            raise Unsupported(f"type {t}")
        return self.aliases[t]

    def d_decl(self):
        self.take()
        names = self.listed(self.name)
        self.take("(")
        types = []
        while self.peek()[1] != ")":
            self.name()
            self.take(":")
            types.append(self.base(self.name()))
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        while self.peek()[0] == "id" and self.peek(1)[1] != "(" and self.peek(1)[1] != ":-":
            q = self.take()
            if q not in QUALIFIERS:
                raise Unsupported(f"relation qualifier {q}")
        if not types:
            raise Unsupported("a relation of arity 0")
        for n in names:
            self.p.types[n] = types
            self.p.facts.setdefault(n, set())

    def io_names(self) -> tuple[list[str], dict]:
        self.take()
        names = self.listed(self.name)
        params = {}
        if self.peek()[1] == "(":
            self.take()
            while self.peek()[1] != ")":
                k = self.name()
                self.take("=")
                kind, v = self.peek()
                self.take()
                params[k] = json.loads(v) if kind == "str" else v
                if self.peek()[1] == ",":
                    self.take()
            self.take(")")
        if set(params) - {"IO", "filename", "delimiter"} or params.get("IO", "file") != "file":
            raise Unsupported(f"I/O parameters {params}")
        return names, params

    def d_input(self):
        names, params = self.io_names()
        for n in names:
            self.p.inputs[n] = (params.get("filename", f"{n}.facts"), params.get("delimiter", "\t"))

    def d_output(self):
        names, params = self.io_names()
        if "filename" in params:
            raise Unsupported("an output file name")
        self.p.outputs += names

    def d_printsize(self):
        self.io_names()

    def d_plan(self):
        self.take()
        while True:
            self.take()  # version
            self.take(":")
            self.take("(")
            while self.peek()[1] != ")":
                self.take()
            self.take(")")
            if self.peek()[1] != ",":
                return
            self.take()

    def clause(self):
        heads = self.listed(self.atom)
        if self.peek()[1] == ".":
            self.take()
            for h in heads:
                if len(h.args) != len(self.p.types[h.rel]):
                    raise Unsupported(f"a fact of {h.rel} with {len(h.args)} values")
                if not all(isinstance(x, Const) for x in h.args):
                    raise Unsupported("a fact with variables")
                self.p.facts[h.rel].add(tuple(x.value for x in h.args))
            return
        self.take(":-")
        for conj in self.disjunction():
            for h in heads:
                self.p.rules.append((h, conj))
        self.take(".")

    def disjunction(self) -> list[list]:
        out = self.conjunction()
        while self.peek()[1] == ";":
            self.take()
            out += self.conjunction()
        return out

    def conjunction(self) -> list[list]:
        conjs = [[]]
        while True:
            if self.peek()[1] == "(" and not self.starts_constraint():
                self.take()
                alts = self.disjunction()
                self.take(")")
                conjs = [c + a for c in conjs for a in alts]
            else:
                lit = self.literal()
                conjs = [c + ([lit] if lit is not None else []) for c in conjs]
            if self.peek()[1] != ",":
                return conjs
            self.take()

    def starts_constraint(self) -> bool:
        depth, j = 0, self.i
        while True:
            v = self.toks[j][1]
            if v == "(":
                depth += 1
            elif v == ")":
                depth -= 1
                if depth == 0:
                    return self.toks[j + 1][1] in RELOPS or self.toks[j + 1][1] in ARITH
            elif self.toks[j][0] == "end":
                return False
            j += 1

    def literal(self):
        kind, v = self.peek()
        if v == "!":
            self.take()
            a = self.atom()
            a.negated = True
            return a
        if kind == "id" and v in ("true",):
            self.take()
            return None
        if kind == "id" and v not in FUNCTORS and self.peek(1)[1] == "(" and v in self.declared:
            return self.atom()
        if kind == "id" and self.peek(1)[1] == "(" and v not in FUNCTORS:
            raise Unsupported(f"a call of {v}")
        left = self.expr()
        op = self.take()
        if op not in RELOPS:
            raise Unsupported(f"operator {op}")
        return Cmp(op, left, self.expr())

    def atom(self) -> Atom:
        rel = self.name()
        if rel not in self.declared:
            raise Unsupported(f"undeclared relation {rel}")
        self.take("(")
        args = []
        while self.peek()[1] != ")":
            args.append(self.expr())
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        return Atom(rel, args)

    def expr(self, level: int = 0):
        ops = [("+", "-"), ("*", "/", "%")]
        if level == len(ops):
            return self.unary()
        e = self.expr(level + 1)
        while self.peek()[1] in ops[level]:
            op = self.take()
            e = Op(op, [e, self.expr(level + 1)])
        return e

    def unary(self):
        kind, v = self.peek()
        if v == "-":
            self.take()
            e = self.unary()
            return Const(-e.value) if isinstance(e, Const) and isinstance(e.value, int) else Op("neg", [e])
        if v == "(":
            self.take()
            e = self.expr()
            self.take(")")
            return e
        self.take()
        if kind == "num":
            if "." in v:
                raise Unsupported("floats")
            return Const(_int(v.rstrip("u")))
        if kind == "str":
            return Const(json.loads(v))
        if kind == "id" and v == "_":
            self.anon += 1
            return Var(f"_anon{self.anon}")
        if kind == "id" and v in ("count", "sum", "min", "max") and self.peek()[1] != "(":
            target = None if v == "count" else self.expr()
            self.take(":")
            if self.peek()[1] == "{":
                self.take()
                alts = self.disjunction()
                self.take("}")
                if len(alts) != 1:
                    raise Unsupported("a disjunction inside an aggregate")
                return Agg(v, target, alts[0])
            return Agg(v, target, [self.atom()])
        if kind == "id" and v in FUNCTORS and self.peek()[1] == "(":
            self.take()
            args = self.listed(self.expr)
            self.take(")")
            return Op(v, args)
        if kind == "id" and v not in ("nil", "as", "true", "false"):
            return Var(v)
        raise Unsupported(f"expression {v!r}")


def parse_program(text: str, name: str = "program") -> Program:
    return _Parser(text, name).program()


def _int(text: str) -> int:
    return int(text, 0) if text[:2].lower() in ("0x", "0b") else int(text)


def _rows(path: Path, types: list[str], delimiter: str = "\t") -> set:
    out = set()
    for line in path.read_text().splitlines():
        if not line:
            continue
        cells = line.split(delimiter)
        if len(cells) != len(types):
            raise Unsupported(f"{path.name}: a row of {len(cells)} cells")
        out.add(tuple(_int(c) if t == "number" else c for c, t in zip(cells, types)))
    return out


def load(directory: Path) -> Program:
    """The Soufflé test case in ``directory``, translated (raises ``Unsupported``)."""
    d = Path(directory)
    p = parse_program((d / f"{d.name}.dl").read_text(), d.name)
    for rel, (fname, delim) in p.inputs.items():
        f = d / "facts" / fname if (d / "facts" / fname).exists() else d / fname
        if not f.exists():
            raise Unsupported(f"no input file {fname}")
        p.facts[rel] |= _rows(f, p.types[rel], delim)
    for rel in p.outputs:
        f = d / f"{rel}.csv"
        if f.exists():
            p.expected[rel] = _rows(f, p.types[rel])
    if not p.expected:
        raise Unsupported("no expected output")
    return p
