import CNearbySystem
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A host's anchor (`nearby-lan __anchor NAMESPACE DIR`): a process that holds the host's
/// network namespace and a mount namespace of its own with a private /run, so that
/// commands can enter the host (`nsenter -t ANCHOR -n -m`) whatever else runs there.
///
/// It joins the network namespace, makes a mount namespace whose mounts propagate nowhere,
/// mounts a sysfs of that network namespace (as `ip netns exec` does) and a tmpfs on /run
/// with the host's state directory bound back at its path, writes its PID to
/// `DIR/anchor.pid`, and becomes `sleep infinity`. Runs before any other thread exists.
enum Anchor {
  /// Never returns: it becomes `sleep infinity`, or exits 1 with a message on stderr (the
  /// anchor's log).
  static func run(namespace: String, directory: String, environment: [String: String]) -> Never {
    func fail(_ what: String) -> Never {
      OutputWriter.standardError.line("lan: anchor of \(directory): \(what): \(String(cString: strerror(errno)))")
      exit(1)
    }
    let namespaceFile = open(LANStateLayout.namespacePath(namespace), O_RDONLY | O_CLOEXEC)
    guard namespaceFile >= 0 else { fail("cannot open \(LANStateLayout.namespacePath(namespace))") }
    guard nearby_setns(namespaceFile, NEARBY_CLONE_NEWNET) == 0 else { fail("setns(\(namespace))") }
    close(namespaceFile)
    guard nearby_unshare(NEARBY_CLONE_NEWNS) == 0 else { fail("unshare(CLONE_NEWNS)") }
    guard nearby_make_mounts_private() == 0 else { fail("making mounts private") }
    if nearby_remount_sysfs() != 0 {
      OutputWriter.standardError.line("lan: anchor: /sys still shows the outer namespace: \(String(cString: strerror(errno)))")
    }
    // Give the host a private /run (its own dbus and avahi sockets and pid files, as on a
    // real machine), but keep its state directory visible at the same path: open it before
    // the tmpfs hides it, then bind it back (through the descriptor, which still resolves).
    let state = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard state >= 0 else { fail("cannot open \(directory)") }
    guard nearby_mount_tmpfs("nearby-lan-run", "/run", "mode=0755") == 0 else { fail("mounting a tmpfs on /run") }
    do {
      for path in [directory, "/run/dbus", "/run/avahi-daemon"] { try LabFiles.makeDirectories(path) }
    } catch {
      OutputWriter.standardError.line("lan: anchor: \(error.message)")
      exit(1)
    }
    guard nearby_bind_mount("/proc/self/fd/\(state)", directory) == 0 else { fail("binding \(directory) back") }
    close(state)
    do {
      try LabFiles.write("\(getpid())\n", to: directory + "/anchor.pid")
    } catch {
      OutputWriter.standardError.line("lan: anchor: \(error.message)")
      exit(1)
    }
    let sleep = ToolPaths(environment: environment).path("sleep")
    nearby_unblock_all_signals()
    let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(sleep), strdup("infinity"), nil]
    execv(sleep, arguments)
    fail("cannot run \(sleep)")
  }
}
