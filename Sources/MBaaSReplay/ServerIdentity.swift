public import MBaaSCore

/// Who answered a recorded exchange, read from the response headers: MBaaSKit's own emulator (`mbaas serve`),
/// which names itself in every response, or a server that states its product and version in `Server`.
///
/// # Contract
/// - The emulator sends `Server: mbaas-emulator/<MBaaSKit version>` and ``emulatorHeader`` with its dialect
///   (`X-MBaaS-Emulator: ncmb`) on every response; either header alone identifies it.
/// - ``init(headers:)`` is `nil` when the headers say nothing about the server.
/// - ``RecordingTransport`` keeps both headers in the cassette whatever its header selection, so a cassette
///   recorded from the emulator shows it in its exchanges; ``Cassette/init(json:)`` refuses such a cassette whose
///   provenance says ``Provenance/Kind/recorded``.
public struct ServerIdentity: Sendable, Hashable {
    /// The response header in which the emulator names its dialect.
    public static let emulatorHeader = "X-MBaaS-Emulator"
    /// The product name of the emulator in `Server` (`mbaas-emulator/0.9.0`).
    public static let emulatorProduct = "mbaas-emulator"

    /// The `Server` header's product (`mbaas-emulator`, `nginx`), when the response had one.
    public var product: String?
    /// The `Server` header's version (the text after the first `/` of its first word), when it had one.
    public var version: String?
    /// The emulator's dialect (``emulatorHeader``), when the emulator answered.
    public var emulatorDialect: String?

    /// Whether MBaaSKit's emulator answered.
    public var isEmulator: Bool {
        emulatorDialect != nil || product?.lowercased() == Self.emulatorProduct
    }

    /// How provenance names the emulator: `mbaas-emulator/0.9.0 (dialect ncmb)`.
    public var emulatorDescription: String {
        (product ?? Self.emulatorProduct) + (version.map { "/" + $0 } ?? "")
            + (emulatorDialect.map { " (dialect \($0))" } ?? "")
    }

    public init(product: String? = nil, version: String? = nil, emulatorDialect: String? = nil) {
        self.product = product
        self.version = version
        self.emulatorDialect = emulatorDialect
    }

    /// What the headers say about the server, or `nil` when they say nothing.
    public init?(headers: HTTPFields) {
        var product: String?
        var version: String?
        if let server = headers["Server"], let word = server.split(separator: " ").first {
            let parts = word.split(separator: "/", maxSplits: 1).map(String.init)
            product = parts.first
            version = parts.count > 1 && !parts[1].isEmpty ? parts[1] : nil
        }
        let dialect = headers[Self.emulatorHeader].flatMap { $0.isEmpty ? nil : $0 }
        guard product != nil || dialect != nil else { return nil }
        self.init(product: product, version: version, emulatorDialect: dialect)
    }
}
