// Notices when a file changes, the way files change in production: the file's folder is watched (editors
// save by renaming over the file, and Kubernetes swaps a mount's `..data` symlink, both of which a watch on
// the file itself misses) and the path is also polled, for filesystems that send no events. Bursts of
// events are debounced into one call.
import { statSync, watch, unwatchFile, watchFile, type FSWatcher, type StatsListener } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface WatchFileOptions {
  debounceMs: number;
  pollIntervalMs: number;
}

// Events about other files of the folder are ignored; `..`-names are a Kubernetes mount's own entries,
// and a missing name means the platform could not tell.
function concernsFile(fileName: string, changed: string | null): boolean {
  return changed === null || changed === fileName || changed.startsWith('..');
}

/** Calls `onChange` (debounced) whenever the file at `path` may have changed; returns the way to stop. */
export function watchFileChanges(path: string, options: WatchFileOptions, onChange: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, options.debounceMs).unref();
  };
  const poll: StatsListener = (current, previous) => {
    if (
      current.mtimeMs !== previous.mtimeMs ||
      current.ino !== previous.ino ||
      current.size !== previous.size
    ) {
      changed();
    }
  };
  watchFile(path, { interval: options.pollIntervalMs, persistent: false }, poll);
  const fileName = basename(path);
  let folder: FSWatcher | undefined;
  try {
    folder = watch(dirname(path), { persistent: false }, (_event, changedName) => {
      if (concernsFile(fileName, changedName)) changed();
    });
    // A vanished folder ends its watcher; polling the path still notices the file's return.
    folder.on('error', () => folder?.close());
  } catch {
    folder = undefined;
  }
  return () => {
    clearTimeout(timer);
    unwatchFile(path, poll);
    folder?.close();
  };
}

/** What identifies the file at a path (symlinks followed), and what an in-place write changes. */
interface FileState {
  identity: string;
  mtimeMs: number;
  size: number;
}

function fileState(path: string): FileState | undefined {
  try {
    const stats = statSync(path);
    return { identity: `${stats.dev}:${stats.ino}`, mtimeMs: stats.mtimeMs, size: stats.size };
  } catch {
    // Missing for a moment (between an unlink and a rename), or unreadable: judged at the next change.
    return undefined;
  }
}

/**
 * Like watchFileChanges, but tells a whole-file replacement from a write in place. A replacement (a file
 * renamed over the path, or a Kubernetes mount's `..data` symlink swapped to a new folder) puts a new
 * file, whole, at the path: `onReplaced`. A write in place changes the same file, which a reader may see
 * half-written (a prefix that still parses), so it is only reported: `onWrittenInPlace`.
 */
export function watchFileReplacements(
  path: string,
  options: WatchFileOptions,
  handlers: { onReplaced: () => void; onWrittenInPlace: () => void },
): () => void {
  let seen = fileState(path);
  return watchFileChanges(path, options, () => {
    const now = fileState(path);
    if (now === undefined) return;
    const before = seen;
    seen = now;
    if (before === undefined || now.identity !== before.identity) handlers.onReplaced();
    else if (now.mtimeMs !== before.mtimeMs || now.size !== before.size) handlers.onWrittenInPlace();
  });
}
