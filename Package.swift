// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
  .swiftLanguageMode(.v6),
  .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
  name: "Nearby",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Nearby", targets: ["Nearby"]),
    .library(name: "NearbyCore", targets: ["NearbyCore"]),
    .executable(name: "nearby", targets: ["nearby"]),
    .executable(name: "nearby-lan", targets: ["nearby-lan"]),
  ],
  targets: [
    // Pure values and state machines: no I/O, no threads, no Foundation.
    .target(name: "NearbyCore", swiftSettings: strict),

    // epoll/eventfd and a few macros Glibc does not export.
    .target(name: "CNearbySystem"),

    // The DNS-SD C API: Avahi's compatibility library on Linux, the system's on macOS.
    .systemLibrary(
      name: "CDNSSD",
      pkgConfig: "avahi-compat-libdns_sd",
      providers: [.apt(["libavahi-compat-libdnssd-dev"])]
    ),

    // libsodium: the only cryptography (identity keys, handshake, records, envelopes).
    .systemLibrary(
      name: "CSodium",
      pkgConfig: "libsodium",
      providers: [.apt(["libsodium-dev"])]
    ),
    // Identity keys, the handshake state machine, records and end-to-end envelopes: pure
    // functions and values over libsodium, no sockets, clocks or files.
    .target(
      name: "NearbyCrypto",
      dependencies: ["NearbyCore", "CSodium"],
      swiftSettings: strict
    ),

    .target(
      name: "NearbyTransport",
      dependencies: ["NearbyCore", "NearbyCrypto", "NearbySystem", "CNearbySystem"],
      swiftSettings: strict
    ),
    .target(
      name: "NearbyDiscovery",
      dependencies: ["NearbyCore", "NearbyTransport", "CDNSSD"],
      swiftSettings: strict
    ),
    // The public API: `import Nearby`.
    .target(
      name: "Nearby",
      dependencies: ["NearbyCore", "NearbyCrypto", "NearbyTransport", "NearbyDiscovery", "NearbySystem"],
      swiftSettings: strict
    ),
    // Processes, lines in and out, signals: what the commands, the lab and the tests share.
    .target(name: "NearbySystem", dependencies: ["CNearbySystem"], swiftSettings: strict),
    // The argument parser and the `nearby` tool's commands and typed options.
    .target(name: "NearbyCommandLine", dependencies: ["Nearby"], swiftSettings: strict),
    // The chat behind every front end: commands, the line chat, text and JSON output.
    .target(name: "NearbyChat", dependencies: ["Nearby", "NearbySystem"], swiftSettings: strict),
    // The terminal chat: model, line editor, keys, display width, terminal driver.
    .target(
      name: "NearbyTerminalUI",
      dependencies: ["NearbyChat", "Nearby", "NearbySystem", "CNearbySystem"],
      swiftSettings: strict
    ),
    // Chat scripts: the language, its parser and its runner.
    .target(name: "NearbyScript", dependencies: ["NearbyChat", "Nearby", "NearbySystem"], swiftSettings: strict),
    // The NATS C client (libnats-dev): connections, JetStream, key-value.
    .systemLibrary(
      name: "CNats",
      pkgConfig: "libnats",
      providers: [.apt(["libnats-dev"])]
    ),
    // Relays federating sites through a NATS cluster: presence, messages per recipient,
    // offline delivery (the shell of the session state machine's federation route).
    .target(
      name: "NearbyFederation",
      dependencies: ["Nearby", "NearbyCore", "CNats"],
      swiftSettings: strict
    ),
    // `nearby relay`: the relay service.
    .target(name: "NearbyRelay", dependencies: ["Nearby", "NearbyFederation", "NearbySystem"], swiftSettings: strict),
    .target(
      name: "NearbyBench",
      dependencies: [
        "Nearby", "NearbyCore", "NearbyCrypto", "NearbyTransport", "NearbySystem", "CNearbySystem", "NearbyFederation", "NearbyLab",
      ],
      swiftSettings: strict
    ),
    // The harnesses: the private LAN (network namespaces with their own Avahi) and `nearby
    // lab` (several peers on such LANs), a local NATS cluster, and a hand-driven protocol peer
    // (the hostile-peer tests' and the benchmark's floods).
    .target(
      name: "NearbyLab",
      dependencies: ["NearbySystem", "NearbyScript", "NearbyCore", "NearbyCrypto", "CNearbySystem"],
      swiftSettings: strict
    ),
    // The harness's command line (scripts/lan runs it).
    .executableTarget(name: "nearby-lan", dependencies: ["NearbyLab", "NearbySystem"], swiftSettings: strict),
    .executableTarget(
      name: "nearby",
      dependencies: [
        "Nearby", "NearbyChat", "NearbyTerminalUI", "NearbyScript", "NearbyRelay", "NearbyFederation", "NearbyCommandLine", "NearbyBench",
        "NearbyLab", "NearbySystem",
      ],
      swiftSettings: strict
    ),

    // Helpers shared by the test targets.
    .target(
      name: "NearbyTestSupport",
      dependencies: ["NearbyCore", "NearbyCrypto", "NearbyTransport", "NearbySystem", "NearbyLab"],
      path: "Tests/NearbyTestSupport",
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyCoreTests",
      dependencies: ["NearbyCore"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyCryptoTests",
      dependencies: ["NearbyCrypto", "NearbyCore"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyTransportTests",
      dependencies: ["NearbyTransport", "NearbyCore", "NearbyCrypto", "NearbyTestSupport", "NearbyLab", "CNearbySystem"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyDiscoveryTests",
      dependencies: ["NearbyDiscovery", "NearbyCore", "NearbyTransport", "NearbyTestSupport", "NearbySystem"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyTests",
      dependencies: [
        "Nearby", "NearbyCore", "NearbyCrypto", "NearbyTransport", "NearbyTestSupport", "NearbyLab", "CNearbySystem", "NearbyRelay",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyChatTests",
      dependencies: ["NearbyChat", "Nearby", "NearbySystem"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyTerminalUITests",
      dependencies: ["NearbyTerminalUI", "NearbyChat", "Nearby", "NearbyCore"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyScriptTests",
      dependencies: ["NearbyScript", "NearbyChat", "Nearby", "NearbyCore"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyLabTests",
      dependencies: ["NearbyLab", "NearbyScript", "CNearbySystem"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyCommandLineTests",
      dependencies: ["NearbyCommandLine", "NearbyTestSupport"],
      exclude: ["Golden"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyFederationTests",
      dependencies: ["NearbyFederation", "Nearby", "NearbyCore", "NearbyLab", "NearbyTestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "EndToEndTests",
      dependencies: ["Nearby", "NearbyCore", "NearbyTransport", "NearbyTestSupport", "NearbySystem", "CNearbySystem", "NearbyBench"],
      swiftSettings: strict
    ),
  ]
)
