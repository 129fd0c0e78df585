#if canImport(Glibc)
  import Glibc
#endif

/// Runs a command's long-lived tasks as one task tree until its main service ends, and
/// routes the process's signals to a handler — the shape of swift-service-lifecycle's
/// `ServiceGroup`, which every `nearby` command uses to run its session (or browser) with
/// the tasks around it.
///
/// The main service (a session's `run()`) decides when the group ends: when it returns or
/// throws, the other services are cancelled and awaited, and the group returns (or rethrows
/// the main service's error). Other services may end the group too (`endsGroup`: a timeout).
/// Signals go to `onSignal`, which typically asks the main service to shut down gracefully
/// (a session: `shutdown()`, saying goodbye to its peers), or ends the group at once by
/// returning `true`.
public struct ServiceGroup: Sendable {
  /// A named task of the group.
  public struct Service: Sendable {
    public let name: String
    /// Whether the group ends when this service ends.
    public let endsGroup: Bool
    let body: @Sendable () async throws -> Void

    public init(_ name: String, endsGroup: Bool = false, _ body: @escaping @Sendable () async throws -> Void) {
      self.name = name
      self.endsGroup = endsGroup
      self.body = body
    }
  }

  public let main: Service
  public let services: [Service]
  public let signals: AsyncStream<Int32>?
  public let onSignal: @Sendable (Int32) async -> Bool

  /// - Parameters:
  ///   - main: the service whose end ends the group.
  ///   - services: run alongside it; cancelled when the group ends. One that ends early (an
  ///     input reader at end of input) just ends, unless it `endsGroup`; one that throws is
  ///     reported by `run()` once the group has ended.
  ///   - signals: the process's signals (``SignalWatcher``), or `nil`.
  ///   - onSignal: called with each signal, in order; returning `true` ends the group now.
  public init(
    main: Service, alongside services: [Service] = [], signals: AsyncStream<Int32>?, onSignal: @escaping @Sendable (Int32) async -> Bool
  ) {
    self.main = main
    self.services = services
    self.signals = signals
    self.onSignal = onSignal
  }

  /// Runs every service until the main one ends.
  /// - Throws: the main service's error, else the first error of another service.
  public func run() async throws {
    enum Outcome: Sendable {
      case main((any Error)?)
      case other(String, ends: Bool, (any Error)?)
    }
    var mainError: (any Error)?
    var otherError: (any Error)?
    await withTaskGroup(of: Outcome.self) { group in
      group.addTask { [main] in
        do {
          try await main.body()
          return .main(nil)
        } catch {
          return .main(error)
        }
      }
      for service in services {
        group.addTask {
          do {
            try await service.body()
            return .other(service.name, ends: service.endsGroup, nil)
          } catch {
            return .other(service.name, ends: service.endsGroup, error)
          }
        }
      }
      if let signals {
        group.addTask { [onSignal] in
          for await signal in signals where await onSignal(signal) {
            return .other("signals", ends: true, nil)
          }
          return .other("signals", ends: false, nil)
        }
      }
      while let outcome = await group.next() {
        switch outcome {
        case .main(let error):
          mainError = error
          group.cancelAll()
        case .other(_, let ends, let error):
          if let error, !(error is CancellationError), otherError == nil { otherError = error }
          if ends { group.cancelAll() }
        }
      }
    }
    if let error = mainError ?? otherError { throw error }
  }
}
