"""The concepts the dashboard's tabs explain, one Markdown file each (``<slug>.md``, the slug
of the tab's concept title: "Live join" -> ``live-join.md``), shipped as package data: the
tabs' concept cards read them (:func:`workbench.app.panes.concept`) and the docs' Concepts
page includes the same files, so each explanation has one home."""
