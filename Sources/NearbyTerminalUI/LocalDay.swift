#if canImport(Glibc)
  import Glibc
#endif

/// A calendar day in local time, for the lines that say the day changed.
public struct LocalDay: Hashable, Comparable, Sendable {
  public let year: Int
  /// 1–12.
  public let month: Int
  /// 1–31.
  public let day: Int
  /// 0 Sunday … 6 Saturday.
  public let weekday: Int

  /// The local day of a time (milliseconds since the epoch).
  public init(_ milliseconds: UInt64) {
    var seconds = time_t(milliseconds / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    year = Int(parts.tm_year) + 1900
    month = Int(parts.tm_mon) + 1
    day = Int(parts.tm_mday)
    weekday = Int(parts.tm_wday)
  }

  public static func < (lhs: LocalDay, rhs: LocalDay) -> Bool {
    (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
  }

  private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
  private static let months = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December",
  ]

  /// `Tuesday 3 December 2026`.
  public var text: String { "\(Self.weekdays[weekday]) \(day) \(Self.months[month - 1]) \(year)" }
}
