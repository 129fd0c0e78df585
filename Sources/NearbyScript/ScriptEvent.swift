import Nearby
import NearbyChat

/// A chat line as a script sees it: its kind (the `event` of `--json`), the peers it is
/// about, the text an expectation's `"text"` or `/regex/` is matched against, and the line
/// printed for people.
public struct ScriptEvent: Sendable, Equatable {
  public var kind: ScriptEventKind
  public var peers: [Peer]
  public var text: String
  /// The text-mode line (for failure messages).
  public var display: String
  /// The chat's answer to a command it could not carry out (`! no peer called 'bob' ...`).
  public var isCommandError: Bool

  public init(kind: ScriptEventKind, peers: [Peer] = [], text: String, display: String? = nil, isCommandError: Bool = false) {
    self.kind = kind
    self.peers = peers
    self.text = text
    self.display = display ?? text
    self.isCommandError = isCommandError
  }

  /// The event a chat line stands for; nil for lines that show nothing.
  public init?(_ line: ChatLine) {
    guard let display = Self.renderer.render(line) else { return nil }
    switch line {
    // `ready` is about ourselves: `from NAME` never matches it.
    case .ready: self.init(kind: .ready, text: display)
    case .event(let event):
      guard let (kind, peers, text) = Self.describe(event, display: display) else { return nil }
      self.init(kind: kind, peers: peers, text: text, display: display)
    case .sent(_, let text, let peers, _): self.init(kind: .sent, peers: peers, text: text, display: display)
    case .peers(let found): self.init(kind: .peers, peers: found.map(\.peer), text: display)
    case .who(let connected, _): self.init(kind: .who, peers: connected, text: display)
    case .relayed(let relayed): self.init(kind: .relayed, peers: relayed.map(\.peer), text: display)
    case .invitations(let pending): self.init(kind: .invitations, peers: pending.map(\.peer), text: display)
    case .transfers(let transfers): self.init(kind: .transfers, peers: transfers.map(\.progress.peer), text: display)
    case .notice(let text): self.init(kind: .notice, text: text, display: display)
    case .error(let text): self.init(kind: .error, text: text, display: display, isCommandError: true)
    case .settled: return nil
    }
  }

  private static let renderer = PlainOutput(writer: .standardError, json: false)

  private static func describe(_ event: SessionEvent, display: String) -> (ScriptEventKind, [Peer], String)? {
    switch event {
    case .found(let peer): return (.found, [peer.peer], display)
    case .updated(let peer): return (.updated, [peer.peer], display)
    case .lost(let peer): return (.lost, [peer], display)
    case .invitation(let invitation): return (.invitation, [invitation.peer], String(decoding: invitation.context, as: UTF8.self))
    case .invitationWithdrawn(let peer, let reason): return (.invitationWithdrawn, [peer], reason)
    case .connecting(let peer): return (.connecting, [peer], display)
    case .connected(let peer, _): return (.connected, [peer], display)
    case .declined(let peer, let reason): return (.declined, [peer], reason.description)
    case .reconnecting(let peer, _): return (.reconnecting, [peer], display)
    case .reconnected(let peer): return (.reconnected, [peer], display)
    case .disconnected(let peer, let reason): return (.disconnected, [peer], reason.description)
    case .message(let message): return (.message, [message.from], String(decoding: message.body, as: UTF8.self))
    case .delivered(_, let peer): return (.delivered, [peer], display)
    case .queued(_, let peer): return (.queued, [peer], display)
    case .reachable(let peer, let relay): return (.reachable, [peer], relay.name.value)
    case .unreachable(let peer): return (.unreachable, [peer], display)
    case .verification(let peer, let code, _): return (.verification, [peer], code)
    case .trusted(let peer): return (.trusted, [peer], display)
    case .impostorWarning(let peer, let verified): return (.impostor, [peer, verified], display)
    case .transfer(.offer(let offer)): return (.offer, [offer.from], display)
    case .transfer(.started(let progress)), .transfer(.progress(let progress)): return (.transfer, [progress.peer], display)
    case .transfer(.finished(_, let peer, _, let end, _)):
      switch end {
      case .completed: return (.transferDone, [peer], display)
      case .cancelled(_, let message): return (.transferCancelled, [peer], message)
      case .failed(_, let message): return (.transferFailed, [peer], message)
      }
    case .error(let error):
      let peer: Peer? =
        switch error {
        case .undelivered(_, let peer, _, _), .connectFailed(let peer, _), .protocolError(let peer, _), .authenticationFailed(let peer, _): peer
        case .relayTampered(let relay, _, _): relay
        case .rejected: nil
        }
      return (.error, peer.map { [$0] } ?? [], error.description)
    case .status(let status):
      switch status {
      case .listening: return nil
      case .advertised(let name): return (.advertised, [], name)
      case .advertisingFailed(let text): return (.error, [], "advertising: \(text)")
      case .browsingFailed(let text): return (.error, [], "browsing: \(text)")
      case .foreignService(_, let reason): return (.foreign, [], reason)
      case .discoveryCrowded(let limit):
        return (.notice, [], "discovery: more than \(limit) services announced; the newest are left out until there is room")
      case .connectionRejected(let peer, let reason): return (.rejected, peer.map { [$0] } ?? [], reason)
      }
    }
  }
}
