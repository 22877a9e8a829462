"""The experiments' figures use the library's one figure style (:mod:`jaxbandits.plotting`):
constrained layout, legends outside the panels, dodged series with distinct markers, grid axes
ticked at their values."""
from __future__ import annotations

from jaxbandits.plotting import (dodge, grid_axis, integer_ticks, legend_outside, new_figure,  # noqa: F401
                                 plain_log_ticks, series_styles)

log_ticks_plain = plain_log_ticks
