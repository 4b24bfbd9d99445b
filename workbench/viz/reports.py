"""Shareable reports: execute every notebook and write self-contained HTML (``workbench reports``).

Each notebook runs top to bottom in a fresh kernel (from its own folder) and becomes one HTML
file that a browser shows offline: the notebooks load every resource inline themselves
(:func:`workbench.viz.notebook.setup_notebook`); for a notebook that does not, Panel's
stylesheets referenced on Panel's CDN are replaced here by their inline text; and the page
template loads neither require.js, MathJax nor Mermaid from the internet.  An ``index.html``
links the reports.

Each report records its wall and CPU seconds: the kernel's CPU (user and system, read from
the finished kernel process) and this process's own.  A progress bar (tqdm, on the
terminal) counts each notebook's code cells as they finish, so a run at the papers' sizes
(``workbench reports --paper``) shows where it is.
"""

from __future__ import annotations

import html
import json
import re
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Report", "build_reports", "checkout_notebooks", "fetched_urls", "notebook_paths"]

_OFFLINE_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""

_IMPORTED_SHEET = re.compile(
    r'\{"type":"object","name":"ImportedStyleSheet","id":"(?P<id>[^"]+)",'
    r'"attributes":\{"url":"(?P<url>[^"]+)"\}\}'
)

_FETCHED = [
    re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']?(https?://[^\"'\s>]+)", re.IGNORECASE),
    re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?(https?://[^\"'\s>]+)", re.IGNORECASE),
    re.compile(r"@import\s+(?:url\()?[\"']?(https?://[^\"')\s]+)", re.IGNORECASE),
    re.compile(r'"name":"ImportedStyleSheet"[^}]*"url":"(https?://[^"]+)"'),
    re.compile(r"(?:js_urls|css_urls)\s*=\s*\[[^\]]*?[\"'](https?://[^\"']+)"),
]


@dataclass(frozen=True)
class Report:
    """One executed notebook: its HTML file, the executed notebook itself (outputs kept, to
    open in JupyterLab or share), title, execution time (wall seconds) and the CPU seconds it
    took (its kernel's and this process's, user and system)."""

    notebook: Path
    html: Path
    executed: Path
    title: str
    seconds: float
    cpu_seconds: float = float("nan")


def fetched_urls(page: str) -> list[str]:
    """The http(s) URLs a browser would fetch on opening ``page``: script sources, stylesheet
    links and imports, Bokeh's imported stylesheets and BokehJS autoload URLs.

    >>> fetched_urls('<script src="https://cdn.example/x.js"></script><a href="https://a.b">')
    ['https://cdn.example/x.js']
    """
    return sorted({m.group(1) for pattern in _FETCHED for m in pattern.finditer(page)})


def _inline_stylesheets(text: str) -> str:
    """Replace Bokeh ``ImportedStyleSheet`` references to Panel's CDN by their inline CSS."""
    from panel.io.resources import CDN_DIST, DIST_DIR

    def inline(match: re.Match[str]) -> str:
        url = match.group("url")
        if not url.startswith(CDN_DIST):
            return match.group(0)
        path = DIST_DIR / url[len(CDN_DIST) :].split("?")[0]
        if not path.is_file():
            return match.group(0)
        css = json.dumps(path.read_text(encoding="utf-8")).replace("</", "<\\/")
        return (
            f'{{"type":"object","name":"InlineStyleSheet","id":"{match.group("id")}",'
            f'"attributes":{{"css":{css}}}}}'
        )

    return _IMPORTED_SHEET.sub(inline, text)


def checkout_notebooks() -> Path | None:
    """The notebooks folder of the source checkout the package runs from (an editable
    install), else ``notebooks/`` in the current folder; None when neither exists (an
    installed wheel has no notebooks: they live in the source repository)."""
    checkout = Path(__file__).resolve().parents[2]
    for folder in (checkout / "notebooks", Path.cwd() / "notebooks"):
        if folder.is_dir() and (folder.parent / "pyproject.toml").is_file():
            return folder
    return None


def notebook_paths(paths: Sequence[str | Path] = ()) -> list[Path]:
    """The notebooks to run: each path a notebook or a folder of them (its ``*.ipynb`` in
    name order); none given: :func:`checkout_notebooks`.  A path that is neither, or no
    notebooks at all, is an error saying what to give."""
    if not paths:
        folder = checkout_notebooks()
        if folder is None:
            raise FileNotFoundError(
                "no notebooks folder: give one (workbench reports path/to/notebooks); the "
                "notebooks are in the workbench's source repository, not in the package"
            )
        paths = [folder]
    found: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            found += sorted(given.glob("*.ipynb"))
        elif given.is_file() and given.suffix == ".ipynb":
            found.append(given)
        else:
            raise FileNotFoundError(f"notebook path = {str(given)!r} is no notebook or folder")
    if not found:
        raise FileNotFoundError(f"no notebooks (*.ipynb) in {', '.join(map(str, paths))}")
    return found


def _title(nb: object, fallback: str) -> str:
    for cell in nb.cells:  # type: ignore[attr-defined]
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def _cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its finished children (the kernels,
    once shut down and reaped)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _execute(nb: object, path: Path, timeout: int | None, progress: bool) -> None:
    """Run ``nb`` in a fresh kernel from its own folder, a tqdm bar over its code cells."""
    from nbclient import NotebookClient
    from tqdm import tqdm

    code = sum(cell.cell_type == "code" for cell in nb.cells)  # type: ignore[attr-defined]
    with tqdm(total=code, desc=path.name, unit="cell", disable=not progress) as bar:

        def done(cell: object, **_: object) -> None:
            if cell.cell_type == "code":  # type: ignore[attr-defined]
                bar.update()

        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            on_cell_executed=done,
        ).execute()


def build_reports(
    out: str | Path = "build/reports",
    notebooks: Sequence[str | Path] = (),
    timeout: int | None = 600,
    progress: bool = False,
) -> list[Report]:
    """Execute ``notebooks`` (notebooks or folders of them; default: the checkout's, see
    :func:`notebook_paths`) and write one HTML report and the executed notebook each, plus
    ``index.html``, into ``out``.  ``timeout``: seconds a cell may take (None: no limit, for
    the papers' sizes); ``progress``: a bar over each notebook's cells on the terminal.
    Returns the reports in order."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    paths = notebook_paths(notebooks)
    target = Path(out)
    for path in paths:
        if (target / path.name).resolve() == path.resolve():
            raise ValueError(
                f"out = {str(out)!r} holds the notebooks themselves: their executed copies "
                "would overwrite them (give another folder)"
            )
    target.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(
        extra_loaders=[DictLoader({"offline.html.j2": _OFFLINE_TEMPLATE})],
        template_file="offline.html.j2",
    )
    reports = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        start, cpu = time.perf_counter(), _cpu_seconds()
        _execute(nb, path, timeout, progress)
        seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
        for cell in nb.cells:
            if "outputs" not in cell:
                continue
            # HoloViews also publishes empty display data: nothing to show, so drop it
            cell.outputs = [
                o
                for o in cell.outputs
                if o.output_type not in ("display_data", "execute_result") or o.get("data")
            ]
            for output in cell.outputs:
                for mime, value in output.get("data", {}).items():
                    if isinstance(value, str):
                        output["data"][mime] = _inline_stylesheets(value)
        page, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        destination = target / f"{path.stem}.html"
        destination.write_text(page, encoding="utf-8")
        executed = target / path.name
        nbformat.write(nb, executed)
        reports.append(Report(path, destination, executed, _title(nb, path.stem), seconds, cpu))
    items = "\n".join(
        f'<li><a href="{html.escape(r.html.name)}">{html.escape(r.title)}</a> '
        f'<small>(<a href="{html.escape(r.executed.name)}">{html.escape(r.notebook.name)}</a>, '
        f"executed in {r.seconds:.1f} s, "
        f"{r.cpu_seconds:.1f} CPU s)</small></li>"
        for r in reports
    )
    (target / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Workbench reports</title></head>\n<body>\n<h1>Workbench reports</h1>\n"
        "<p>Notebooks reproducing the papers, executed on the default data (seeded).</p>\n"
        f"<ol>\n{items}\n</ol>\n</body></html>\n",
        encoding="utf-8",
    )
    return reports
