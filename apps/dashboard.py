"""The workbench dashboard: `panel serve apps/dashboard.py` (or `./dev dashboard`)."""

import panel as pn

from workbench.app import DeploymentExplorer, PTJoinExplorer

pn.extension(sizing_mode="stretch_width")

if pn.state.served:
    pn.template.FastListTemplate(
        title="Uncertain-time stream workbench",
        main=[
            pn.Tabs(
                ("Deployment (simulated)", DeploymentExplorer()),
                ("PTJoin partitions", PTJoinExplorer()),
            )
        ],
    ).servable()
