public import MBaaSCore

// A minimal adapter: an in-memory "server" behind the core protocols, shipped as the library product
// `MBaaSExampleAdapter` so that an adapter written outside this package can start from it (and use its public
// helpers, ``InMemoryQuery``). It is the example of the DocC article "Writing an adapter": it runs the bundled
// suite (ExampleAdapterTests), passes every scenario it can run, and is skipped, with a reason, on what it does
// not declare.

/// Opens ``MemoryBackend``s. Every backend opened for the same URL host shares one ``MemoryServer``, as two
/// clients of one real server would (so scenarios with two users work).
public struct MemoryBackendFactory: BackendFactory {
    public let schemes = ["memory"]
    public let adapterName = "memory"
    private let servers = ServerDirectory()

    public init() {}

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        MemoryBackend(server: await servers.server(named: url.host ?? url.path), context: context)
    }

    private actor ServerDirectory {
        var servers: [String: MemoryServer] = [:]
        func server(named name: String) -> MemoryServer {
            if let s = servers[name] { return s }
            let s = MemoryServer()
            servers[name] = s
            return s
        }
    }
}
