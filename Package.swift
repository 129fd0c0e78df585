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
      dependencies: ["NearbyCore", "CNearbySystem"],
      swiftSettings: strict
    ),
    .target(
      name: "NearbyDiscovery",
      dependencies: ["NearbyCore", "NearbyTransport", "CDNSSD"],
      swiftSettings: strict
    ),
    .target(
      name: "Nearby",
      dependencies: ["NearbyCore", "NearbyTransport", "NearbyDiscovery"],
      swiftSettings: strict
    ),
    .target(name: "NearbyCommandLine", swiftSettings: strict),
    .target(
      name: "NearbyChat",
      dependencies: ["Nearby", "NearbyCore", "NearbyTransport", "CNearbySystem"],
      swiftSettings: strict
    ),
    .target(
      name: "NearbyBench",
      dependencies: ["Nearby", "NearbyCore", "NearbyTransport", "NearbyDiscovery", "CNearbySystem"],
      swiftSettings: strict
    ),
    // `nearby lab`: several peers on private LANs built with scripts/lan.
    .target(
      name: "NearbyLab",
      dependencies: ["NearbyTransport", "NearbyChat"],
      swiftSettings: strict
    ),
    .executableTarget(
      name: "nearby",
      dependencies: ["Nearby", "NearbyChat", "NearbyCommandLine", "NearbyDiscovery", "NearbyBench", "NearbyLab", "CNearbySystem"],
      swiftSettings: strict
    ),

    // Helpers shared by the test targets (never part of a product).
    .target(
      name: "NearbyTestSupport",
      dependencies: ["NearbyCore", "NearbyTransport"],
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
      dependencies: ["NearbyTransport", "NearbyCore"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyDiscoveryTests",
      dependencies: ["NearbyDiscovery", "NearbyCore", "NearbyTransport", "NearbyTestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyTests",
      dependencies: ["Nearby", "NearbyCore", "NearbyTransport", "NearbyTestSupport", "CNearbySystem", "NearbyChat"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyChatTests",
      dependencies: ["NearbyChat", "Nearby", "NearbyCore"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyLabTests",
      dependencies: ["NearbyLab"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NearbyCommandLineTests",
      dependencies: ["NearbyCommandLine", "NearbyTestSupport"],
      exclude: ["Golden"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "EndToEndTests",
      dependencies: ["Nearby", "NearbyCore", "NearbyTransport", "NearbyTestSupport", "CNearbySystem"],
      swiftSettings: strict
    ),
  ]
)
