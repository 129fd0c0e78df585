/// Where a receiver saves the files of an offer: each offered name made into a safe path
/// relative to the download folder (PROTOCOL.md 13.5).
///
/// A name is split at `/` (and `\`, which Windows senders use); empty, `.` and `..`
/// components are dropped, so nothing climbs out of the download folder and an absolute
/// name lands inside it (`/etc/passwd` is saved as `etc/passwd`); control characters and
/// invisible formatting characters (which could rewrite a terminal or hide an extension)
/// become `_`; names Windows reserves for devices (`CON`, `NUL`, `COM1`, ...) get a `_` in
/// front; a component longer than 200 bytes is shortened, keeping its extension. Within one
/// offer, two entries never get the same path and no file stands where another entry needs a
/// folder: the later one gets ` (2)`, ` (3)`, ... (compared ignoring case, for file systems
/// that do).
package enum TransferName {
  /// The longest component kept, in bytes: room for ` (999)` and `.part` under NAME_MAX (255).
  package static let maximumComponentBytes = 200
  /// The deepest path accepted.
  package static let maximumDepth = 32

  /// The safe components of one offered name (never empty).
  ///
  /// The name is split at the scalars `/` and `\\`, not at characters: a `/` followed by a
  /// combining mark is one character that is not `/`, and it reached the file system as a
  /// separator (`../\u{301}x` climbed out of the download folder).
  package static func components(of name: String) -> [String] {
    var result: [String] = []
    for part in name.unicodeScalars.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "/" || $0 == "\\" }) {
      let part = String(String.UnicodeScalarView(part))
      if part == "." || part == ".." { continue }
      result.append(component(Substring(part)))
    }
    return result.isEmpty ? ["_"] : result
  }

  /// One path component made safe (``isSafe(_:)`` holds for it).
  ///
  /// The checks for `.`, `..` and empty come after shortening: a name of two dots and one
  /// long character (a letter with hundreds of combining marks) was shortened to `..`, and
  /// each such component climbed one folder out of the download folder.
  package static func component(_ text: Substring) -> String {
    var cleaned = String.UnicodeScalarView()
    let scalars = Array(text.unicodeScalars)
    for (index, scalar) in scalars.enumerated() {
      let hidden = HiddenCharacters.isHidden(
        scalar, after: index > 0 ? scalars[index - 1] : nil, before: index + 1 < scalars.count ? scalars[index + 1] : nil)
      cleaned.append(hidden || scalar == "/" || scalar == "\\" ? "_" : scalar)
    }
    var name = shortened(String(cleaned), to: maximumComponentBytes)
    if name == "." || name == ".." || name.isEmpty { name = "_" }
    if isReservedOnWindows(name) { name = "_" + name }
    return name
  }

  /// Whether `component` can be one component of a path below the download folder: not
  /// empty, `.` or `..`, without `/` or NUL, and at most ``maximumComponentBytes`` (plus one
  /// for the `_` of a name Windows reserves). What ``component(_:)`` makes always is; the
  /// receiver checks every path again before it touches the disk.
  package static func isSafe(_ component: String) -> Bool {
    guard !component.isEmpty, component != ".", component != "..", component.utf8.count <= maximumComponentBytes + 1 else { return false }
    return !component.utf8.contains { $0 == UInt8(ascii: "/") || $0 == 0 }
  }

  /// Whether every component of `path` is ``isSafe(_:)``, and there is at least one and at
  /// most ``maximumDepth``.
  package static func isSafe(path: [String]) -> Bool {
    !path.isEmpty && path.count <= maximumDepth && path.allSatisfy { isSafe($0) }
  }

  /// `CON`, `PRN`, `AUX`, `NUL`, `COM1`-`COM9`, `LPT1`-`LPT9`, alone or with an extension,
  /// in any case.
  static func isReservedOnWindows(_ name: String) -> Bool {
    let stem = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map { $0.uppercased() } ?? ""
    if ["CON", "PRN", "AUX", "NUL"].contains(stem) { return true }
    if stem.count == 4, stem.hasPrefix("COM") || stem.hasPrefix("LPT"), let digit = stem.last, ("1"..."9").contains(digit) { return true }
    return false
  }

  /// `name` cut to at most `limit` UTF-8 bytes at a character boundary, keeping an extension
  /// of up to 20 bytes.
  package static func shortened(_ name: String, to limit: Int) -> String {
    guard name.utf8.count > limit else { return name }
    var stem = Substring(name)
    var suffix = ""
    if let dot = name.lastIndex(of: "."), dot != name.startIndex, name.utf8.distance(from: dot, to: name.endIndex) <= 20 {
      stem = name[..<dot]
      suffix = String(name[dot...])
    }
    let room = limit - suffix.utf8.count
    var kept = ""
    for character in stem {
      if kept.utf8.count + character.utf8.count > room { break }
      kept.append(character)
    }
    return kept + suffix
  }

  /// `name` with ` (n)` before its extension: `notes (2).txt`, `photos (3)`.
  package static func numbered(_ name: String, _ number: Int) -> String {
    guard number > 1 else { return name }
    let mark = " (\(number))"
    if let dot = name.lastIndex(of: "."), dot != name.startIndex {
      return shortened(String(name[..<dot]), to: maximumComponentBytes - mark.utf8.count - name.utf8.distance(from: dot, to: name.endIndex))
        + mark + name[dot...]
    }
    return shortened(name, to: maximumComponentBytes - mark.utf8.count) + mark
  }

  /// The path of every entry of an offer, in order.
  /// - Returns: the paths, or why the offer cannot be saved (a name too deep).
  package static func paths(for files: [OfferedFile]) -> Result<[[String]], TransferNameError> {
    var kinds: [String: Bool] = [:]  // lowercased path -> is a folder
    // Where the search for a free number stopped last, per lowercased path as offered: a
    // path once taken stays taken (and a file stays a file), so the next search of the same
    // path starts there. Searching from 2 each time was quadratic: an offer of 4 096 entries
    // of one name kept a session's thread busy for minutes.
    var folderNumbers: [String: Int] = [:]
    var entryNumbers: [String: Int] = [:]
    var result: [[String]] = []
    result.reserveCapacity(files.count)
    for file in files {
      var path = components(of: file.name)
      guard path.count <= maximumDepth else { return .failure(.tooDeep(file.name, path.count)) }
      // Every folder on the way must not be a file of an earlier entry.
      for level in 0..<(path.count - 1) {
        let base = path[level]
        let offered = key(path[0...level])
        var number = folderNumbers[offered] ?? 1
        if number > 1 { path[level] = numbered(base, number) }
        while kinds[number == 1 ? offered : key(path[0...level])] == false {
          number += 1
          path[level] = numbered(base, number)
        }
        folderNumbers[offered] = number
        kinds[key(path[0...level])] = true
      }
      // The entry itself must be new.
      let base = path[path.count - 1]
      let offered = key(path[...])
      var number = entryNumbers[offered] ?? 1
      if number > 1 { path[path.count - 1] = numbered(base, number) }
      while kinds[number == 1 ? offered : key(path[...])] != nil {
        number += 1
        path[path.count - 1] = numbered(base, number)
      }
      entryNumbers[offered] = number
      kinds[key(path[...])] = file.isDirectory
      result.append(path)
    }
    return .success(result)
  }

  private static func key(_ path: ArraySlice<String>) -> String { path.joined(separator: "/").lowercased() }
}

/// Why an offer's names cannot be saved.
package enum TransferNameError: Error, Hashable, Sendable, CustomStringConvertible {
  case tooDeep(String, Int)

  package var description: String {
    switch self {
    case .tooDeep(let name, let depth):
      "the offered name '\(name.prefix(80))' is \(depth) folders deep (at most \(TransferName.maximumDepth))"
    }
  }
}
