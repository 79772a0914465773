import Foundation
public import MBaaSCore

/// NCMB scripts (server-side JavaScript): any method on
/// `https://script.mbaas.api.nifcloud.com/2015-09-01/script/{name}`, signed like the data API but with the
/// script host and path. Query and body pass through; a script error is `500`, an unknown script `404`.
extension NCMBBackend {
    /// Runs a script and returns its response (2xx), or throws the mapped error.
    public func executeScript(
        _ name: String, method: TransportRequest.Method = .post, query: [(String, String)] = [], body: JSON? = nil
    ) async throws -> TransportResponse {
        guard !name.isEmpty else { throw MBaaSError(.invalidRequest, "a script needs a name") }
        let path = "/\(configuration.scriptAPIVersion)/script/" + percentEncode(name)
        let payload: Body
        switch body {
        case nil: payload = .none
        case .object(let o)?: payload = .json(o)
        case let other?:
            throw MBaaSError(.invalidRequest, "a script body must be a JSON object, got \(other.printed())")
        }
        return try await sendSigned(method, base: configuration.scriptBaseURL, path: path, query: query,
                                    body: payload, useSession: true, timeout: nil, context: "script \(name)")
    }
}
