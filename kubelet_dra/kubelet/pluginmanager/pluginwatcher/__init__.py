"""The plugin watcher: inotify on the registry dir feeds the desired state of the world."""
