"""drive_module_repair: a heavy structured payload carried across modules by three seats."""
