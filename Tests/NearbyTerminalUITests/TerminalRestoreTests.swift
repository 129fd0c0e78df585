import NearbyChat
import NearbyTerminalUI
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The terminal goes back to its settings however the process ends: the chat puts a
/// pseudo-terminal in raw mode in a child process that then exits, crashes or aborts.
@Suite struct TerminalRestoreTests {
  /// A pseudo-terminal; the test keeps the master and one slave descriptor open, so the
  /// slave's settings outlive the child.
  struct PseudoTerminal {
    let master: Int32
    let slave: Int32
    let path: String

    init() throws {
      // posix_openpt and friends are not in Swift's Glibc module: /dev/ptmx with the ioctls
      // they wrap (TIOCSPTLCK to unlock, TIOCGPTN for the number).
      master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
      var unlock: Int32 = 0
      var number: UInt32 = 0
      guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
        throw WaitError("no pseudo-terminal")
      }
      path = "/dev/pts/\(number)"
      slave = open(path, O_RDWR | O_NOCTTY)
      guard slave >= 0 else { throw WaitError("cannot open \(path)") }
    }

    var isCooked: Bool {
      var settings = termios()
      guard tcgetattr(slave, &settings) == 0 else { return false }
      let flags = tcflag_t(ICANON) | tcflag_t(ECHO) | tcflag_t(ISIG)
      return settings.c_lflag & flags == flags
    }

    func close() {
      Glibc.close(slave)
      Glibc.close(master)
    }
  }

  struct WaitError: Error {
    let text: String
    init(_ text: String) { self.text = text }
  }

  /// In the child: raw mode on the pseudo-terminal, or exit 3 if it did not take.
  static func enterRawMode(_ path: String) {
    let fd = open(path, O_RDWR | O_NOCTTY)
    var settings = termios()
    guard fd >= 0, Terminal.enterRawMode(input: fd, output: fd) != nil, tcgetattr(fd, &settings) == 0,
      settings.c_lflag & tcflag_t(ICANON) == 0
    else { exit(3) }
  }

  @Test func exitRestores() async throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    let path = terminal.path
    await #expect(processExitsWith: .exitCode(0)) { [path = path as String] in
      Self.enterRawMode(path)
      exit(0)
    }
    #expect(terminal.isCooked)
  }

  @Test func fatalErrorRestores() async throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    let path = terminal.path
    await #expect(processExitsWith: .failure) { [path = path as String] in
      Self.enterRawMode(path)
      fatalError("on purpose")
    }
    #expect(terminal.isCooked)
  }

  @Test func segmentationFaultRestores() async throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    let path = terminal.path
    await #expect(processExitsWith: .signal(SIGSEGV)) { [path = path as String] in
      Self.enterRawMode(path)
      UnsafeMutablePointer<Int>(bitPattern: 8)!.pointee = 1
    }
    #expect(terminal.isCooked)
  }

  @Test func abortRestores() async throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    let path = terminal.path
    await #expect(processExitsWith: .signal(SIGABRT)) { [path = path as String] in
      Self.enterRawMode(path)
      abort()
    }
    #expect(terminal.isCooked)
  }
}
