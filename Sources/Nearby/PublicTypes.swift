import NearbyCore
import NearbySystem

// The values of the public API. They are defined next to the protocol machinery that uses
// them (NearbyCore, whose state machines, frames and codec stay `package`); these names make
// them part of `import Nearby`, and nothing else of that module is.

/// The stable identity of a peer: 128 bits, written as 32 lowercase hex digits.
public typealias PeerID = NearbyCore.PeerID
/// A peer: its id, display name and discovery info.
public typealias Peer = NearbyCore.Peer
/// A display name: 1–63 bytes of UTF-8, no control characters or other hidden characters.
public typealias DisplayName = NearbyCore.DisplayName
public typealias DisplayNameError = NearbyCore.DisplayNameError
/// Characters that hide or rearrange text on a screen (refused in names, escaped in text).
public typealias HiddenCharacters = NearbyCore.HiddenCharacters
/// A DNS-SD service type such as `_nearby-devices._tcp`.
public typealias ServiceType = NearbyCore.ServiceType
public typealias ServiceTypeError = NearbyCore.ServiceTypeError
/// Key/value pairs published in the TXT record.
public typealias DiscoveryInfo = NearbyCore.DiscoveryInfo
public typealias DiscoveryInfoError = NearbyCore.DiscoveryInfoError
/// A numeric address and port.
public typealias Endpoint = NearbyCore.Endpoint
/// A peer seen through DNS-SD: the peer, its host and where it listens.
public typealias DiscoveredPeer = NearbyCore.DiscoveredPeer
/// Where a peer behind federated relays is: its site, and whether it is online.
public typealias PeerSite = NearbyCore.PeerSite
/// How a session answers invitations.
public typealias AcceptPolicy = NearbyCore.AcceptPolicy
/// An invitation waiting for our answer.
public typealias Invitation = NearbyCore.Invitation
/// Whom a message is for.
public typealias Recipients = NearbyCore.Recipients
/// A message handed to the application.
public typealias ReceivedMessage = NearbyCore.ReceivedMessage
/// Identifies a message of one sender.
public typealias MessageID = NearbyCore.MessageID
/// What became of a message we sent.
public typealias DeliveryReport = NearbyCore.DeliveryReport
public typealias DeliveryFailure = NearbyCore.DeliveryFailure
/// Why a send sent nothing.
public typealias SendError = NearbyCore.SendError
/// Why a message did not reach a peer.
public typealias UndeliveredReason = NearbyCore.UndeliveredReason
/// Everything a session reports.
public typealias SessionEvent = NearbyCore.SessionEvent
/// News about the session itself.
public typealias SessionStatus = NearbyCore.SessionStatus
/// Errors reported as events.
public typealias SessionError = NearbyCore.SessionError
/// What the handshake of a session proved (its verification code), and whether the person
/// verified the peer.
public typealias PeerSecurity = NearbyCore.PeerSecurity
/// Why a connection ended.
public typealias DisconnectReason = NearbyCore.DisconnectReason
/// Why an invitation was declined.
public typealias DeclineReason = NearbyCore.DeclineReason
/// Why a peer said goodbye.
public typealias GoodbyeReason = NearbyCore.GoodbyeReason
/// The code of a protocol error.
public typealias ErrorCode = NearbyCore.ErrorCode
/// Why a relay could not deliver a message.
public typealias UndeliverableReason = NearbyCore.UndeliverableReason
/// The protocol's timeouts (tests shrink them).
public typealias ConnectionTimeouts = NearbyCore.ConnectionTimeouts
/// What a relay forwarded and dropped.
public typealias RelayStatistics = NearbyCore.RelayStatistics
/// A failed system call (`connect: Connection refused (errno 111)`).
public typealias SystemError = NearbySystem.SystemError

extension Recipients {
  /// One peer.
  public static func peer(_ id: PeerID) -> Recipients { .peers([id]) }
}
