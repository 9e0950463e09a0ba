"""The IPython extension: `%load_ext traceguard`, then `%%traceguard` on a cell or `%traceguard` on a line.

IPython calls `load_ipython_extension`, which `traceguard/__init__.py` loads on
first use. This module imports IPython, never TensorFlow or JAX: the backend is
imported by `watch()` when the first watched cell runs.

The watched code runs as the cell would without the magic: IPython's own
transformations (`%magics`, `!commands`) apply, the value of a cell's last
expression is displayed in place, and an exception propagates unchanged, so
the cell fails as it would (traceguard's frames are hidden from IPython's
traceback). The report is displayed below the cell's output, also when the
cell raises, and kept in the user's namespace as `_traceguard`.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from types import CodeType
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from traceguard._diagnosis.explanation import Explanation

# The user variable holding the report of the last watched cell or statement.
REPORT_VARIABLE = "_traceguard"
# The options that take a value (FILE), by which a line's options are told from its statement.
FILE_OPTIONS = ("--html", "--trace-file")
ACCEPTED = "--summary, --html FILE and --trace-file FILE"
# One shell-like word: quoted parts and unquoted runs, as `arg_split` reads them.
_WORD = re.compile(r"""\s*((?:"[^"]*"|'[^']*'|[^\s"']+)+)""")
_TITLE_LENGTH = 60


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Registers the `%traceguard` line magic and `%%traceguard` cell magic.

    IPython calls it on `%load_ext traceguard`.

    Args:
        ipython: The running `InteractiveShell`.
    """
    ipython.register_magics(TraceguardMagics)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Removes the magics `load_ipython_extension` registered (`%unload_ext traceguard`).

    Args:
        ipython: The running `InteractiveShell`.
    """
    magics = ipython.magics_manager.magics
    for kind in ("line", "cell"):
        if isinstance(getattr(magics[kind].get("traceguard"), "__self__", None), TraceguardMagics):
            del magics[kind]["traceguard"]
    ipython.magics_manager.registry.pop(TraceguardMagics.__name__, None)


def split_options(line: str) -> tuple[str, str]:
    """`line` as the options at its start and the statement after them, kept verbatim.

    The options are the words starting with `-`, each of `FILE_OPTIONS` (or an
    abbreviation argparse accepts) with the word after it; `--` ends them.
    """
    position, takes_value = 0, False
    while (match := _WORD.match(line, position)) is not None:
        word = match.group(1)
        if takes_value:
            takes_value = False
        elif word.startswith("-"):
            if word == "--":
                position = match.end()
                break
            name, equals, _ = word.partition("=")
            takes_value = (not equals and name.startswith("--") and len(name) > 2
                           and any(option.startswith(name) for option in FILE_OPTIONS))
        else:
            break
        position = match.end()
    return line[:position].strip(), line[position:].strip()


def _cell_number(shell: InteractiveShell) -> int:
    """The number of the running cell, its `In[n]` and `Out[n]`.

    The display hook's count: IPython 9 adds one to `execution_count` before a cell
    runs, IPython 8 after.
    """
    return int(shell.displayhook.prompt_count)


def _ends_with_semicolon(code: str) -> bool:
    """Whether the last token of `code` (comments aside) is ";", IPython's rule for silencing a
    cell's value (`DisplayHook.quiet`; its own helper exists from IPython 8.10 only)."""
    skipped = (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
    tokens = [token for token in tokenize.generate_tokens(io.StringIO(code).readline)
              if token.type not in skipped]
    return bool(tokens) and tokens[-1].type == tokenize.OP and tokens[-1].string == ";"


def _leading_blank_lines(source: str) -> int:
    lines = source.splitlines()
    return next((index for index, line in enumerate(lines) if line.strip()), len(lines))


@magics_class
class TraceguardMagics(Magics):
    """The `%traceguard` and `%%traceguard` magics."""

    @no_var_expand  # The statement is Python: `{...}` and `$x` in it are not IPython's to expand.
    @needs_local_scope
    @line_cell_magic
    @magic_arguments()
    @argument("--summary", action="store_true",
              help="show the text report (the problems first, then the tables) instead of the HTML "
              "tables")
    @argument("--html", metavar="FILE", help="also write the self-contained HTML report, with its "
              "timeline of every layer's body runs, to FILE (in an existing directory)")
    @argument("--trace-file", metavar="FILE", help="also write every record to FILE as it happens "
              "(JSON Lines; `traceguard report FILE` renders it); FILE may hold {pid}, {host}, {worker}, "
              "..., filled when it opens")
    @argument("statement", nargs="*", help="in line mode, the statement to watch")
    def traceguard(self, line: str, cell: str | None = None, local_ns: dict[str, Any] | None = None) -> Any:
        """Watches a cell, or one statement, with `traceguard.watch()` and shows the report below it.

        Usage: `%%traceguard [--summary] [--html FILE] [--trace-file FILE]` on
        the first line of a cell, or `%traceguard [options] STATEMENT` on one
        line. The code runs as it would without the magic (its output, the value
        of its last expression, its exceptions); then the report is displayed:
        the HTML tables of every traced function and every Keras layer's body
        runs (a terminal shows the text report), or with --summary the text
        report. The report, a
        `traceguard.Explanation`, is kept in the variable `_traceguard`, also
        when the code raises (the report is shown, then the exception
        propagates). In line mode the statement's value is returned, as `%time`
        returns it: `history = %traceguard model.fit(x, y)`.
        """
        __tracebackhide__ = True  # noqa: F841 (IPython leaves this frame out of tracebacks)
        magic = "%traceguard" if cell is None else "%%traceguard"
        options, statement = split_options(line) if cell is None else (line, "")
        try:
            arguments = parse_argstring(self.traceguard, options)
        except UsageError as error:
            raise UsageError(f"{magic}: {error}. It accepts {ACCEPTED} (`%traceguard?` explains "
                             f"them). Received: {magic} {line}") from None
        if cell is not None and arguments.statement:
            raise UsageError(f"%%traceguard watches the cell below it and takes no statement; put the "
                             f"code in the cell. Received: %%traceguard {line}")
        if cell is None and not statement:
            raise UsageError("%traceguard expects a statement to watch, as in `%traceguard "
                             "model.fit(x, y)`; start a cell with %%traceguard to watch the whole cell. "
                             f"Received: %traceguard {line}")
        from traceguard._diagnosis.run import check_output_file
        from traceguard._diagnosis.trace_file import check_trace_file_path

        assert self.shell is not None
        message = check_output_file("--html", arguments.html, magic)
        if message is not None:
            raise UsageError(message)
        if arguments.trace_file is not None:
            try:
                check_trace_file_path(arguments.trace_file, None, None)
            except ValueError as error:
                raise UsageError(f"{magic}: {error}") from None
        if cell is None:
            title = statement if len(statement) <= _TITLE_LENGTH else statement[:_TITLE_LENGTH - 3] + "..."
            return self._watch(statement, title, arguments, local_ns, in_cell=False)
        return self._watch(cell, f"cell In[{_cell_number(self.shell)}]", arguments, local_ns, in_cell=True)

    def _watch(self, source: str, title: str, arguments: Any, local_ns: dict[str, Any] | None,
               in_cell: bool) -> Any:
        """Runs `source` under `watch()`, then shows and keeps the report, however the code ended.

        The code is compiled first: a SyntaxError fails the cell before anything is watched.
        """
        __tracebackhide__ = True  # noqa: F841
        body, last = self._compile(source, in_cell)
        from traceguard._diagnosis.watch import watch  # Imports the backend, at the first watched cell.

        report = None
        try:
            with watch(trace_file=arguments.trace_file) as report:
                report.title = title
                value = self._run(body, last, local_ns)
        except BaseException:
            if report is not None:
                try:
                    self._show(report, arguments)
                except Exception:  # A failure of traceguard's must not hide the user's exception.
                    from traceguard._record.internal_errors import log_internal_error

                    log_internal_error("showing the report of a cell that raised",
                                       "the cell's exception follows")
            raise
        self._show(report, arguments)
        return value

    def _compile(self, source: str, in_cell: bool) -> tuple[CodeType | None, CodeType | None]:
        """`source` compiled as IPython compiles a cell: the statements, then the last expression.

        In a cell, the last expression is compiled to be displayed (mode "single" hands its
        value to `sys.displayhook`, IPython's `Out[n]`) unless a trailing ";" silences it, as
        in any cell; on a line, to be returned. Compiled under a name the shell caches, with
        its AST transformers, so tracebacks show the source lines ("Cell In[n]").
        """
        __tracebackhide__ = True  # noqa: F841
        shell = self.shell
        assert shell is not None
        # IPython drops a cell's leading blank lines; put them back, and a line for `%%traceguard`,
        # so that tracebacks give the line numbers of the cell as the notebook shows it.
        code = "\n" * (in_cell + _leading_blank_lines(source)) + shell.transform_cell(source)
        filename = shell.compile.cache(code, _cell_number(shell), raw_code=source)
        tree = shell.transform_ast(shell.compile.ast_parse(code, filename=filename))
        statements = list(tree.body)
        last = statements.pop() if statements and isinstance(statements[-1], ast.Expr) else None
        body = None
        if statements:
            body = shell.compile(ast.Module(statements, type_ignores=[]), filename, "exec")
        if last is None:
            return body, None
        if not in_cell:
            return body, shell.compile(ast.Expression(last.value), filename, "eval")
        if _ends_with_semicolon(code):
            return body, shell.compile(ast.Module([last], type_ignores=[]), filename, "exec")
        return body, shell.compile(ast.Interactive([last]), filename, "single")

    def _run(self, body: CodeType | None, last: CodeType | None, local_ns: dict[str, Any] | None) -> Any:
        """Runs the compiled cell in the user's namespace; the value of `last` compiled on a line."""
        __tracebackhide__ = True  # noqa: F841
        assert self.shell is not None
        namespace = self.shell.user_ns
        if body is not None:
            exec(body, namespace, local_ns)
        return None if last is None else eval(last, namespace, local_ns)

    def _show(self, report: Explanation, arguments: Any) -> None:
        """Keeps `report` as `_traceguard`, displays it, writes the HTML file and says where files went."""
        from IPython.display import display

        assert self.shell is not None
        self.shell.user_ns[REPORT_VARIABLE] = report
        if arguments.summary:
            display({"text/plain": report.summary()}, raw=True)
        else:
            display(report)
        written = []
        if arguments.html is not None:
            written.append(f"HTML report written to {report.to_html(arguments.html)}")
        if report._trace_file is not None:  # Its fields ({worker}, {pid}, ...) filled.
            written.append(f"trace file written to {report._trace_file.path}")
        if written:
            display({"text/plain": f"traceguard: {'; '.join(written)}"}, raw=True)
