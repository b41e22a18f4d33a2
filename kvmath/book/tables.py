"""HTML tables for the book that fit the text column at 1280 px and reflow at phone width (390 px).

A wide pandas table in a page scrolls inside its own box; these tables instead turn every row into a block of
labelled lines below 600 px (each cell carries its column name in ``data-label``), so nothing is hidden
sideways. One header row, no index column. The style is written with the first table of a page and is
scoped to ``table.kvm-reflow``.
"""

from __future__ import annotations

from html import escape

STYLE = """<style>
table.kvm-reflow { border-collapse: collapse; font-size: 0.85em; margin: 0.5rem 0 1rem; max-width: 100%;
  width: auto; }
table.kvm-reflow th, table.kvm-reflow td { padding: 0.2rem 0.45rem; border-bottom: 1px solid #ddd;
  text-align: right; overflow-wrap: anywhere; }
table.kvm-reflow th:first-child, table.kvm-reflow td:first-child { text-align: left; }
table.kvm-reflow caption { caption-side: bottom; text-align: left; font-size: 0.9em; padding-top: 0.3rem; }
@media (max-width: 600px) {
  table.kvm-reflow thead { display: none; }
  table.kvm-reflow, table.kvm-reflow tbody, table.kvm-reflow tr, table.kvm-reflow td { display: block; width: 100%; }
  table.kvm-reflow tr { border-bottom: 2px solid #bbb; padding: 0.3rem 0; }
  /* a block table's caption would shrink to a narrow column beside the rows: a full-width line above them */
  table.kvm-reflow caption { display: block; width: 100%; padding: 0 0 0.3rem; }
  table.kvm-reflow td { border: none; text-align: right; white-space: normal; padding: 0.1rem 0.2rem; }
  table.kvm-reflow td::before { content: attr(data-label); float: left; font-weight: 600; padding-right: 0.5rem;
    text-align: left; }
  table.kvm-reflow td:first-child { font-weight: 700; text-align: left; }
  table.kvm-reflow td:first-child::before { content: none; }
  /* Markdown tables in a cell's output (a chapter's checked claims: claim | verdict | evidence): each row a block,
     its cells one under another */
  .cell_output table.table thead { display: none; }
  .cell_output table.table, .cell_output table.table tbody, .cell_output table.table tr,
  .cell_output table.table td { display: block; width: 100%; }
  .cell_output table.table tr { border-bottom: 2px solid #bbb; padding: 0.3rem 0; }
  .cell_output .pst-scrollable-table-container { overflow-x: visible; }
}
</style>"""


def _cell(v) -> str:
    if isinstance(v, tuple):  # (figure, smaller second line)
        return f'{escape(str(v[0]))}<br><small>{escape(str(v[1]))}</small>'
    return escape(str(v))


def reflow_table(header: list[str], rows: list[list], *, caption: str = "") -> str:
    """An HTML table (``class="kvm-reflow"``) with one header row and ``rows`` of cells: str() of each,
    escaped, or a ``(figure, note)`` pair written on two lines; ``caption`` in plain text under it. Returns
    the HTML with its style."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td data-label="{escape(str(h))}">{_cell(v)}</td>'
                                    for h, v in zip(header, row)) + "</tr>" for row in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'{STYLE}<table class="kvm-reflow">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def show(html: str):
    """Display HTML in a notebook (IPython imported here)."""
    from IPython.display import HTML, display

    display(HTML(html))


def frame_table(frame, formats: dict | None = None, *, caption: str = "") -> str:
    """A pandas frame as a :func:`reflow_table` (its columns the header, no index). ``formats``: column ->
    format spec (``"{:,.2f}"``) for the numbers of that column; missing values are written as ""."""
    import math

    formats = formats or {}

    def text(col, v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        if isinstance(v, bool):
            return "yes" if v else "no"
        spec = formats.get(col)
        if spec and isinstance(v, (int, float)):
            return spec.format(v)
        return str(v)

    cols = list(frame.columns)
    rows = [[text(c, v) for c, v in zip(cols, r)] for r in frame.itertuples(index=False)]
    return reflow_table([str(c) for c in cols], rows, caption=caption)
