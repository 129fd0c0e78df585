import CNearbySystem

extension ChildProcess {
  /// Makes the calling process get SIGKILL when its parent ends (a child that must not
  /// outlive the process that started it, such as a benchmark's peer process).
  /// - Returns: whether the kernel took it.
  @discardableResult
  public static func dieWithParent() -> Bool { nearby_die_with_parent() == 0 }
}

/// Handing written file data to the disk while more is written (`sync_file_range`).
public enum WriteBehind {
  /// Starts writing `length` bytes of `fd` at `offset` to the disk, after waiting for the
  /// range `waitOffset`/`waitLength` handed over before (0: none) to be on it.
  /// - Returns: whether the calls succeeded (errors of the disk show at the `fsync` after).
  @discardableResult
  public static func hand(_ fd: Int32, offset: Int64, length: Int64, waitingFor waitOffset: Int64, length waitLength: Int64) -> Bool {
    nearby_write_behind(fd, offset, length, waitOffset, waitLength) == 0
  }
}
