import Foundation
import MBaaSCore
@_exported import MBaaSTesting
@testable import MBaaSReplay



func request(
    _ method: String, _ url: String, headers: [(String, String)] = [], json: JSON? = nil, body: Data? = nil,
    idempotencyKey: String? = nil
) -> TransportRequest {
    var h = HTTPFields(headers)
    var data = body
    if let json {
        if h["Content-Type"] == nil { h["Content-Type"] = "application/json" }
        data = json.data()
    }
    return TransportRequest(method: TransportRequest.Method(method)!, url: URL(string: url)!, headers: h, body: data, idempotencyKey: idempotencyKey)
}

let fixedDate = Date(timeIntervalSince1970: 1_711_929_600.123)  // 2024-04-01T00:00:00.123Z

func interaction(
    _ method: String, _ path: String, query: [(String, String)] = [], headers: HTTPFields = [:],
    pinned: [String] = [], body: RecordedBody = .none, status: Int = 200, response: JSON = .object(["ok": true])
) -> Interaction {
    Interaction(
        request: RecordedRequest(method: method, path: path, query: query.map { (name: $0.0, value: $0.1) },
                                 headers: headers, pinnedHeaders: pinned, body: body),
        response: RecordedResponse(status: status, headers: [.contentType: "application/json"], body: .json(response)))
}

func cassette(_ interactions: [Interaction], name: String = "test.scenario") -> Cassette {
    Cassette(name: name, adapter: "test", provenance: .authored(facts: ["test"]), recordedAt: fixedDate,
             backendURL: "test://<APP_KEY>@example.com", interactions: interactions)
}
