"""Export formats for the engines that train at scale (docs/store.md, "Export")."""
