/// Identifies one file transfer (an offer and everything that follows it): 128 random bits
/// chosen by the sender, written as 32 lowercase hex digits. It stays the same across
/// reconnections and restarts, which is how both sides recognise a transfer to resume.
public struct TransferID: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The same representation as a peer id: two halves, most significant first.
  package let value: PeerID

  package init(_ value: PeerID) { self.value = value }

  /// A fresh random id.
  package static func random() -> TransferID { TransferID(PeerID.random()) }

  /// Parses 32 hexadecimal digits. - Returns: `nil` for anything else or all zeros.
  public init?(hex text: some StringProtocol) {
    guard let value = PeerID(hex: text) else { return nil }
    self.value = value
  }

  /// 32 lowercase hexadecimal digits.
  public var hex: String { value.hex }
  /// The first 8 hex digits, for people (`/receive 3fa9c2d1`).
  public var shortHex: String { value.shortHex }
  public var description: String { value.hex }

  public static func < (lhs: TransferID, rhs: TransferID) -> Bool { lhs.value < rhs.value }
}
