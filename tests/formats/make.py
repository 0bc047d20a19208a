"""Test files of each note format, made here (the .docx with python-docx)."""

from __future__ import annotations

import io


def words(tag: str, n: int = 40) -> str:
    """One line of ``n`` words, the first ``tag`` (a word found nowhere else)."""
    return " ".join([tag, *(f"filler{i}" for i in range(n - 1))])


def docx_bytes(title: str = "Field report") -> bytes:
    """A .docx: a Title paragraph, Heading 1 "Rivers" (one paragraph), Heading 2 "Deltas"
    (one paragraph), Heading 1 "Measurements" and a 3x2 table (header Name | Length)."""
    import docx

    doc = docx.Document()
    doc.core_properties.title = ""
    doc.core_properties.author = "Ada Field"
    doc.add_paragraph(title, style="Title")
    doc.add_heading("Rivers", level=1)
    doc.add_paragraph("Rivers carry sediment to the sea.")
    doc.add_heading("Deltas", level=2)
    doc.add_paragraph("The mangrove delta grows each year.")
    doc.add_heading("Measurements", level=1)
    table = doc.add_table(rows=3, cols=2)
    for r, (name, length) in enumerate(
        [("Name", "Length"), ("Nile", "6650 km"), ("Amazon", "6400 km")]
    ):
        table.cell(r, 0).text = name
        table.cell(r, 1).text = length
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


HTML = """<!doctype html>
<html><head><title>Coastal guide</title>
<style>.menu { color: red }</style>
<script>var tracker = "scriptword";</script></head>
<body>
<nav><ul><li><a href="/">navword home</a></li></ul></nav>
<main>
<h1>Coasts</h1>
<p>Cliffs erode slowly.</p>
<h2>Lagoons</h2>
<p>The flamingo lagoon is shallow.</p>
<table><tr><th>Bird</th><th>Count</th></tr><tr><td>pelican</td><td>12</td></tr></table>
</main>
<footer>footerword copyright</footer>
</body></html>
"""

#: line 1 #+TITLE, 2-5 a file drawer, 7 "* Rivers", 8-10 its drawer, 11 text, 12 "** Deltas",
#: 13 text, 14 a comment
ORG = """#+TITLE: Travel notes
:PROPERTIES:
:ID: 4f1c-travel
:CATEGORY: travel
:END:

* TODO Rivers   :water:
:PROPERTIES:
:COUNTRY: Egypt
:END:
The felucca sails on the river.
** Deltas
The ibis nests in the reeds.
# commentword: a comment
"""
