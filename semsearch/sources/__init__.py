"""Sources: what turns folders and files into records of a collection, and keeps them in step.

What lives here, by job: ``vault.py`` (folders of notes as records, one file one record;
:func:`~semsearch.sources.vault.index_folder`), ``formats.py`` (which reader takes which file
suffix), ``pdf.py`` (a PDF's text per page with page offsets), ``html_file.py``,
``docx_file.py``, ``org_file.py`` (those formats as markdown, for heading paths),
``blocks.py`` (a document's blocks written as markdown), ``skipped.py`` (why a file gives no
record), ``records.py`` (JSON, JSON Lines and CSV files imported as records),
``srd.py`` (the D&D 5e SRD import specs), ``sync.py`` (a full sync of a folder that records the
index health) and ``watch.py`` (:class:`~semsearch.sources.watch.FolderWatcher`: a live folder
followed by file-system events; ``sync_folder`` is importable from it too).

Sources sit on top of :class:`semsearch.Collection` and never import the CLI or the servers.
Who may import it: the CLI (``index``, ``import``, ``watch``, and ``serve``/``mcp`` with
``--watch``, which start a watcher beside the server). The servers themselves never import it.
"""
