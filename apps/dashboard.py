"""The dashboard's app file: ``panel serve apps/dashboard.py`` serves its page at /dashboard.

The page lives in the package (:func:`workbench.app.dashboard.serve_page`, its one home):
``workbench dashboard`` serves this file from a checkout, and the package's module when
installed from a wheel (which has no ``apps/``).  Each session runs this file.  What a served
file can declare, the page declares:

- the server's start, once per process (the ``workbench`` log on stderr, Spark started in the
  background, every tab warmed, ``gc.freeze``: :func:`~workbench.app.dashboard.setup_server`):
  by the first session, whose page waits for it, or before it with ``--setup``;
- per session, Panel's extensions, stylesheets and scripts served by this server (the page
  fetches nothing from the internet) and the message shown when the connection drops;
- the workbench's settings, read from ``WORKBENCH_*`` environment variables
  (:mod:`workbench.config`).

Bokeh reads the rest only from ``panel serve``'s command line (no file or setting declares
them), as ``workbench dashboard`` passes them:

- ``--setup workbench/app/server_setup.py``: the server's start before the first session;
- ``--websocket-max-message-size 105906176``: an upload up to the upload limit
  (``WORKBENCH_MAX_UPLOAD_MB``, 50 MB; the size is
  :func:`~workbench.app.serve.websocket_max_message_bytes` of it) reaches the page, which
  refuses a larger one with a message; with Bokeh's default (20 MB) a CSV above about 14 MB
  drops the connection instead;
- ``--check-unused-sessions 2000``: a session whose browser went away ends 15-17 s later,
  and with it its Spark run, which frees its slot (Bokeh looks every 17 s by default);
- ``--address 127.0.0.1``: this machine only (``panel serve`` listens on every interface),
  with ``--allow-websocket-origin`` for each address a page is opened at (Bokeh accepts
  ``localhost:5006`` only; ``BOKEH_ALLOW_WS_ORIGIN`` also sets them);
- ``--num-procs N`` when ``WORKBENCH_SERVER_PROCS`` is N > 1.

From the checkout's folder, the server ``workbench dashboard`` runs (its ``--dry-run`` prints
the command for the current settings)::

    panel serve apps/dashboard.py --address 127.0.0.1 \
        --allow-websocket-origin 127.0.0.1:5006 --allow-websocket-origin localhost:5006 \
        --setup workbench/app/server_setup.py --websocket-max-message-size 105906176 \
        --check-unused-sessions 2000

then open http://127.0.0.1:5006/dashboard.
"""

from __future__ import annotations

from workbench.app.dashboard import serve_page

if __name__.startswith("bokeh_app_"):  # served (pn.state.served, without its 40 ms per session)
    serve_page()
