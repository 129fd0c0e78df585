/// The faults of the soak (`Examples/faults/soak`): `peers` peers, each on a host of its own,
/// paused (a few seconds, then resumed), cut off (their link down, then up: a flap) or killed
/// (and started again a few seconds later: leaving and joining), one fault every 2.5 s from 8 s on, never two at once on one peer, and none in the last 12 s
/// so that the sessions settle before the end. The same seed gives the same file; the checked
/// in `faults` is the 60 s one.
enum SoakPlan {
  static func faults(seconds: Int, peers: Int = 20, seed: UInt64 = 15) -> String {
    var state = seed
    func next(_ bound: Int) -> Int {
      // A small LCG: the same sequence everywhere (the file is checked in).
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int((state >> 33) % UInt64(bound))
    }
    var lines = [
      "# The soak: \(peers) peers, each on a host of its own, chat with a hub while, every 2.5 s, one is",
      "# paused for a few seconds (SIGSTOP, SIGCONT), cut off (link down, up) or killed and started again.",
      "# Made by Tests/EndToEndTests/SoakPlan.swift for \(seconds) s (SOAK_SECONDS); see README, Faults.",
      "# Run: nearby lab --hosts hub,p1,...,p\(peers) --scripts Examples/faults/soak -- sh $PWD/Examples/faults/soak/peer.sh",
    ]
    var busyUntil = [Double](repeating: 0, count: peers + 1)
    var steps: [(Double, String)] = []
    var time = 8.0
    while time <= Double(seconds - 12) {
      let peer = 1 + next(peers)
      if busyUntil[peer] <= time {
        let length = Double(2 + next(5))
        switch next(3) {
        case 0:
          steps.append((time, "pause p\(peer)"))
          steps.append((time + length, "resume p\(peer)"))
        case 1:
          steps.append((time, "link p\(peer) down"))
          steps.append((time + length, "link p\(peer) up"))
        default:
          steps.append((time, "kill p\(peer)"))
          steps.append((time + length, "restart p\(peer)"))
        }
        busyUntil[peer] = time + length + 1
      }
      time += 2.5
    }
    for (at, fault) in steps.sorted(by: { $0.0 < $1.0 }) {
      lines.append("at \(at.truncatingRemainder(dividingBy: 1) == 0 ? String(Int(at)) : String(at))s \(fault)")
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// `hub,p1,...,pN`.
  static func hosts(peers: Int = 20) -> String { (["hub"] + (1...peers).map { "p\($0)" }).joined(separator: ",") }
}
