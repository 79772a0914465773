import MBaaSAppPot
public import MBaaSCore
public import MBaaSEmulator
import MBaaSKii
public import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
import MBaaSParse
import MBaaSPocketBase
public import MBaaSPostgres
import MBaaSSalesforce

/// One built-in adapter: the client factory that opens its URLs, and the emulator dialect that serves the same
/// URLs (for a vendor `mbaas serve` emulates).
public struct BuiltinAdapter: Sendable {
    /// How the adapter reaches its data, which says where it takes part.
    public enum Kind: Sendable, Hashable {
        /// An embedded store (`sqlite:`): the conformance suite runs it live on fresh databases.
        case embedded
        /// A client of an HTTP server: conformance replays its cassettes, `mbaas bench adapters` measures it.
        case http
        /// A client of a database server (`postgres://`): conformance runs it live only (`--mode live --backend URL`),
        /// as it has no cassettes to replay.
        case database
        /// A read-only source or a file format (`ncmb-export:`, `bundle:`): a migration's source or target only.
        case source
    }

    public var factory: any BackendFactory
    public var dialect: (any DialectFactory)?
    public var kind: Kind

    /// The adapter's name (``BackendFactory/adapterName``).
    public var name: String { factory.adapterName }

    public init(_ factory: any BackendFactory, dialect: (any DialectFactory)? = nil, kind: Kind) {
        self.factory = factory
        self.dialect = dialect
        self.kind = kind
    }
}

/// The one list of built-in adapters and dialects. The `mbaas` CLI's registry, `mbaas serve`, `mbaas bench
/// adapters`, the conformance columns and the docs' lists all read it, so an adapter added here is everywhere.
///
/// A new vendor adds one line: its client factory, its dialect factory if the emulator serves it, and its kind.
public enum Builtins {
    /// Every built-in adapter, in the order reports show them. `local` sets how `sqlite:` databases open, `postgres`
    /// how `postgres://` ones do (the server stores: `mbaas serve --password-cost` sets both).
    public static func adapters(local: LocalBackend.Options = LocalBackend.Options(),
                                postgres: PostgresBackend.Options = PostgresBackend.Options()) -> [BuiltinAdapter] {
        [
            BuiltinAdapter(LocalBackendFactory(options: local), kind: .embedded),
            BuiltinAdapter(NCMBBackendFactory(), dialect: NCMBDialectFactory(), kind: .http),
            BuiltinAdapter(KiiBackendFactory(), dialect: KiiDialectFactory(), kind: .http),
            BuiltinAdapter(AppPotBackendFactory(), dialect: AppPotDialectFactory(), kind: .http),
            BuiltinAdapter(PocketBaseBackendFactory(), kind: .http),
            BuiltinAdapter(ParseBackendFactory(), dialect: ParseDialectFactory(), kind: .http),
            BuiltinAdapter(PostgresBackendFactory(options: postgres), kind: .database),
            // Its cassettes are authored from the emulator's Salesforce dialect (labelled simulated, not an org's).
            BuiltinAdapter(SalesforceBackendFactory(), dialect: SalesforceDialectFactory(), kind: .http),
            BuiltinAdapter(NCMBExportBackendFactory(), kind: .source),
            BuiltinAdapter(BundleBackendFactory(), kind: .source),
        ]
    }

    /// A registry of every built-in client factory.
    public static func registry(local: LocalBackend.Options = LocalBackend.Options(),
                                postgres: PostgresBackend.Options = PostgresBackend.Options()) -> BackendRegistry {
        BackendRegistry(adapters(local: local, postgres: postgres).map(\.factory))
    }

    /// A registry of every built-in dialect (what `mbaas serve URL` starts).
    public static var dialects: DialectRegistry {
        DialectRegistry(adapters().compactMap(\.dialect))
    }

    /// The adapters conformance reports show, in column order: every adapter the suite runs against (embedded and
    /// HTTP; an adapter without cassettes shows as not run). Database servers run live only, and are left out.
    public static var conformanceOrder: [String] {
        adapters().filter { $0.kind == .embedded || $0.kind == .http }.map(\.name)
    }

    /// The HTTP adapters, in report order (what `mbaas bench adapters` measures by default).
    public static var httpAdapterNames: [String] {
        adapters().filter { $0.kind == .http }.map(\.name)
    }

    /// The names of the dialects `mbaas serve` serves, in report order.
    public static var dialectNames: [String] {
        adapters().compactMap { $0.dialect?.dialectName }
    }
}
