"""The recommendations and the plan: settings, presets, the judged bound, the expected figure, the answer."""
