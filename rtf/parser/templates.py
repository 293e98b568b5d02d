"""Parse trees reused by the shape of a query: Lark's parse, once per template.

Registered queries repeat a few shapes -- ``SELECT ?s WHERE { ?s a <C> .
?s <p> ?o FILTER ftcontains(?o, "w") }`` with other IRIs and words -- and
Lark's LALR parse (its lexer and parser loop, ~10 us a token in Python)
was two thirds of registration. An LALR parse depends only on the *types*
of the tokens, never on their text: two texts whose token types are the
same have parse trees of the same shape, whose leaves differ only in the
tokens' text. So the tree of the first text of a shape is kept (a
*template*), and a later text of the same shape gets that tree with its own
tokens put in the leaves, without Lark.

The token types of a text are found by Lark's own terminals: the root
lexer's compiled pattern, which tries every terminal in Lark's order and
takes the first that matches, as each state's contextual lexer does among
the terminals that state accepts. (It is tried one character class at a
time: at a position holding an ASCII character, only the terminals that
can begin with that character, in the same order, `rtf.parser.first_chars`;
a terminal left out cannot match there, so the same one is taken.) That makes the reuse exact: a template
is kept only when these types and texts are exactly the tokens Lark's
contextual lexer gave (checked token by token on the text that made it),
and a later text whose types are the template's then gets the same tokens
from Lark too. Proof, token by token: the parser's state before token k is
fixed by the types before it, the same as in the template's text; there
the template's type t_k was accepted, and no terminal before t_k in Lark's
order matches this text at this position (the root pattern would have
taken it), so the state's lexer, which tries the same terminals in the
same order restricted to those it accepts, takes t_k with the same text.

A text that does not lex, has no template, or whose template fails to
build (a bad IRI, an undefined prefix: errors that depend on the tokens'
text) goes through Lark as before; errors are always reported by Lark's
positioned parse (`rtf.parser._parse_with_positions`). A template is kept
only once a query was built from it, so a shape that fails for a reason of
structure (nesting, an unsupported path) is never kept. The cache is
bounded by the tokens its trees hold (`max_tokens`).
"""

from __future__ import annotations

from threading import Lock
from typing import Callable, TypeVar

from lark import Lark, Token, Tree

from rtf.parser.cache import fork_safe
from rtf.parser.first_chars import first_chars

_T = TypeVar("_T")
#: A shape whose tokens differ from Lark's (a contextual choice): always parsed by Lark.
_NO_TEMPLATE = object()


class _Template:
    """A parse tree and the places of its token leaves in the text's token list."""

    __slots__ = ("tree", "leaves", "size")

    def __init__(self, tree: Tree, leaves: list[tuple[list, int, int, str]], size: int):
        self.tree = tree
        self.leaves = leaves  # (the children list holding the leaf, its index, token number, type)
        self.size = size


class TemplateCache:
    """Lark parse trees by token types, at most `max_tokens` tokens in all,
    and none for a text of more than `max_template_tokens` tokens."""

    def __init__(self, parser: Lark, max_tokens: int = 65536, max_template_tokens: int = 256):
        self.parser = parser
        self.max_tokens = max_tokens
        self.max_template_tokens = max_template_tokens
        self.tokens = 0
        self._templates: dict = {}
        self._lock = Lock()  # for put and evict; a template in use is out of the dict
        fork_safe(self)
        self._scan = None
        try:  # Lark's root lexer: its terminals in Lark's order, compiled into one pattern
            lexer = parser.parser.lexer
            root = getattr(lexer, "root_lexer", lexer)
            patterns = root.scanner._mres
            # No terminal's type is changed after matching (Lark's "unless" callbacks for
            # keywords a pattern also matches): none in the root, so none in any state.
            if len(patterns) == 1 and not root.callback:
                self._scan = patterns[0].match
                self._by_char = _dispatch(root.scanner)
                self._ignore = frozenset(root.ignore_types)
        except AttributeError:  # another Lark: no reuse, every text parsed by Lark
            self._scan = None

    def __len__(self) -> int:
        return len(self._templates)

    def clear(self) -> None:
        with self._lock:
            self._templates.clear()
            self.tokens = 0

    def _tokens(self, text: str) -> list | None:
        """The matches of `text`'s tokens, spaces and comments left out; None if it does not lex.

        Each position is matched by the alternation of the terminals that can begin with
        its character (`_dispatch`): the same match as Lark's whole alternation, in half
        the time (a space no longer fails a dozen long patterns first)."""
        by_char, whole, ignore = self._by_char, self._scan, self._ignore
        out = []
        pos, end = 0, len(text)
        while pos < end:
            code = ord(text[pos])
            match = by_char[code] if code < 128 else whole
            m = match(text, pos) if match is not None else None
            if m is None or (stop := m.end()) == pos:
                return None
            if m.lastgroup not in ignore:
                out.append(m)
            pos = stop
        return out

    def build(self, text: str, build: Callable[[Tree, bool], _T], lark_build: Callable[[str], _T]) -> _T:
        """``build(tree, reused)`` for the tree of `text`: a template's if there is
        one (`reused` True: its shape was built before, so whatever depends on
        the shape alone, such as its nesting, holds), else `lark_build(text)`'s
        own parse (which may make a template)."""
        tokens = self._tokens(text) if self._scan is not None else None
        if tokens is None or len(tokens) > self.max_template_tokens:
            return lark_build(text)
        key = tuple([m.lastgroup for m in tokens])
        template = self._templates.pop(key, None)  # atomic: another thread cannot use it meanwhile
        if template is _NO_TEMPLATE:
            self._templates[key] = template
            return lark_build(text)
        if template is None:
            return self._first(text, key, tokens, build)
        for children, index, k, type_ in template.leaves:
            m = tokens[k]
            children[index] = Token(type_, m.group(), m.start())
        try:
            result = build(template.tree, True)
        finally:
            self._put(key, template, counted=True)
        return result

    def _first(self, text: str, key: tuple, tokens: list, build: Callable[[Tree, bool], _T]) -> _T:
        """Parse with Lark, keeping the tree as the template of `key` if Lark's tokens are ours."""
        interactive = self.parser.parse_interactive(text)
        lark_tokens = list(interactive.iter_parse())
        tree = interactive.resume_parse()
        for node in tree.iter_subtrees():
            # Lark names rules with Tokens, whose == is a Python call: the builder
            # compares names a dozen times a node, and a template is built often.
            node.data = str(node.data)
        result = build(tree, False)  # any error: no template (the caller parses again, positioned)
        same = len(lark_tokens) == len(tokens) and all(
            t.type == m.lastgroup and t.start_pos == m.start() and str(t) == m.group()
            for t, m in zip(lark_tokens, tokens))
        leaves = _leaves(tree, {id(t): k for k, t in enumerate(lark_tokens)}) if same else None
        self._put(key, _NO_TEMPLATE if leaves is None else _Template(tree, leaves, len(tokens)))
        return result

    def _put(self, key: tuple, template, counted: bool = False) -> None:
        """Keep `template` for `key`; `counted`: it is one taken out for use, already in `tokens`."""
        with self._lock:
            if counted:
                self.tokens -= _size(template)
            old = self._templates.pop(key, None)
            if old is not None:
                self.tokens -= _size(old)
            size = _size(template)
            while self._templates and self.tokens + size > self.max_tokens:
                self.tokens -= _size(self._templates.pop(next(iter(self._templates))))
            self._templates[key] = template
            self.tokens += size


def _dispatch(scanner) -> list:
    """For each ASCII character, the ``match`` of the alternation of the terminals that
    can begin with it, in Lark's order (None: no terminal can); a terminal whose
    first characters are not known (None from `rtf.parser.first_chars`) is tried at every one.

    An alternation is compiled when a text first holds one of its characters (45
    alternations of long Unicode classes take ~0.2 s to compile: a command that parses
    one query should not pay for all of them)."""
    terminals = scanner.terminals
    firsts = [first_chars(t.pattern.to_regexp(), scanner.g_regex_flags) for t in terminals]
    table: list = []
    lazy: dict[tuple, _Alternation] = {}
    for code in range(128):
        chosen = tuple(t for t, f in zip(terminals, firsts) if f is None or chr(code) in f)
        if not chosen:
            table.append(None)
            continue
        if chosen not in lazy:
            lazy[chosen] = _Alternation(scanner, chosen, table)
        lazy[chosen].codes.append(code)
        table.append(lazy[chosen])
    return table


class _Alternation:
    """Stands in the table for an alternation not compiled yet: compiles it on the first
    call and puts its ``match`` in its characters' places."""

    __slots__ = ("scanner", "terminals", "table", "codes")

    def __init__(self, scanner, terminals: tuple, table: list):
        self.scanner, self.terminals, self.table, self.codes = scanner, terminals, table, []

    def __call__(self, text: str, pos: int):
        match = self.scanner.re_.compile(
            "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in self.terminals),
            self.scanner.g_regex_flags).match
        for code in self.codes:  # another thread compiling it too puts an equal one: harmless
            self.table[code] = match
        return match(text, pos)


def _size(template) -> int:
    return template.size if isinstance(template, _Template) else 1


def _leaves(tree: Tree, number: dict[int, int]) -> list[tuple[list, int, int, str]] | None:
    """Where each token of `tree` is: (children list, index, token number, type); None if a
    leaf is not one of the text's tokens."""
    leaves = []
    stack = [tree]
    while stack:
        node = stack.pop()
        for index, child in enumerate(node.children):
            if isinstance(child, Tree):
                stack.append(child)
            elif isinstance(child, Token):
                k = number.get(id(child))
                if k is None:
                    return None
                leaves.append((node.children, index, k, child.type))
            else:
                return None
    return leaves
