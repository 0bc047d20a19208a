"""Judged questions for the foam-docs vault (../shared/data/vault/foam-docs, MIT licence).

Each question names the one page that answers it, chosen by reading the page (written by hand
for benchmarks/vault_crowding.py; no search result was looked at). ``index.md`` is the vault's
hub: an overview with many short sections that mentions most features, and answers none of
these questions in full.
"""

from __future__ import annotations

QUESTIONS: dict[str, str] = {
    "how do I create a new note from a template": "user/features/templates.md",
    "show a graph of how my notes are connected": "user/features/graph-view.md",
    "where can I see which notes link to the current note": "user/features/backlinking.md",
    "create a note for today's date automatically": "user/features/daily-notes.md",
    "include the content of another note inside this one": "user/features/embeds.md",
    "link to one specific paragraph of a note": "user/features/block-anchors.md",
    "organise notes with hashtags": "user/features/tags.md",
    "paste a screenshot from the clipboard into a note": "user/features/paste-images-from-clipboard.md",
    "publish my notes as a website on GitHub Pages": "user/publishing/publish-to-github-pages.md",
    "render math equations with KaTeX": "user/publishing/math-support-with-katex.md",
    "move my notes over from Obsidian": "user/recipes/migrating-from-obsidian.md",
    "sync my notes to git automatically": "user/recipes/automatic-git-syncing.md",
    "draw diagrams in markdown": "user/recipes/diagrams-in-markdown.md",
    "export a note to PDF": "user/recipes/export-to-pdf.md",
    "find notes that nothing links to": "user/tools/orphans.md",
    "what usage data does Foam collect": "user/tools/telemetry.md",
    "keyboard shortcuts for Foam commands": "user/getting-started/keyboard-shortcuts.md",
    "how do I install Foam in VS Code": "user/getting-started/installation.md",
    "how is a new version of Foam released": "dev/releasing-foam.md",
    "how should tests be written in the Foam codebase": "dev/testing-conventions.md",
    "check the spelling in my notes": "user/features/spell-checking.md",
    "take notes on my phone": "user/recipes/take-notes-from-mobile-phone.md",
    "rename a note and update its links from the command line": "user/tools/cli/rename.md",
    "add footnotes to a note": "user/features/footnotes.md",
}
HUB = "index.md"
