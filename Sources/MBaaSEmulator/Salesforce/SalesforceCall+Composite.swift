import Foundation
import MBaaSCore
import MBaaSSalesforceWire

/// The Composite API, `POST /composite`, for the subrequests a batch mixing verbs sends: sObject create (POST),
/// update (PATCH) and delete (DELETE) [doc: salesforce.md "Composite and sObject Collections"]. Each subrequest is
/// checked first (its path, type, body and, for an update or a delete, that the record exists); with `allOrNone`
/// the writes then go to the store as one atomic batch, and a failure answers the failing subrequest's error and
/// `PROCESSING_HALTED` for every other, nothing written. Other subrequests (queries, references such as
/// `@{ref.id}`) are not served: 400 INVALID_API_INPUT naming the subrequest, before anything is written.
extension SalesforceCall {
    /// One checked subrequest: the neutral operation, and how its success is answered.
    struct CompositeItem {
        var referenceId: String
        var operation: BatchOperation?
        var error: MBaaSError?
    }

    func composite() async throws -> TransportResponse {
        let composite = try SalesforceCompositeRequest(json: .object(try jsonObject()))
        var items: [CompositeItem] = []
        for sub in composite.subrequests {
            var item = CompositeItem(referenceId: sub.referenceId)
            let notServed = MBaaSError(.invalidRequest, "subrequest \(sub.referenceId): only sObject create, update and delete subrequests are served here, got \(sub.method) \(sub.url)",
                                       vendorCode: "INVALID_API_INPUT")
            do {
                let path = String(sub.url.split(separator: "?", maxSplits: 1).first ?? "")
                guard !sub.url.contains("@{"), let parsed = SalesforceRoute.parse(path: path) else { throw notServed }
                switch (parsed.route, sub.method.uppercased()) {
                case (.sobjects(let type), "POST"):
                    try checkType(type)
                    item.operation = .create(Record(className: type, fields: try bodyFields(type, body: try Self.object(sub.body))))
                case (.sobject(let type, let id), "PATCH"):
                    try checkType(type)
                    let fields = try bodyFields(type, body: try Self.object(sub.body))
                    _ = try await existing(type, id)
                    item.operation = .update(className: type, id: id, .set(fields))
                case (.sobject(let type, let id), "DELETE"):
                    try checkType(type)
                    _ = try await existing(type, id)
                    item.operation = .delete(className: type, id: id)
                default:
                    throw notServed
                }
            } catch {
                item.error = MBaaSError.wrap(error)
            }
            items.append(item)
        }
        if items.contains(where: { $0.error != nil }), composite.allOrNone {
            return Self.json(200, SalesforceCompositeResponse(subresponses: items.map { item in
                if let error = item.error { return Self.failed(item.referenceId, error) }
                return Self.halted(item.referenceId)
            }).json)
        }
        var responses = items.map { item in item.error.map { Self.failed(item.referenceId, $0) } }
        let writable = items.indices.filter { items[$0].operation != nil }
        if composite.allOrNone {
            let results = try await owner.batch(writable.map { items[$0].operation! })
            if let failure = results.lazy.compactMap({ if case .failure(let e) = $0 { e } else { nil } }).first {
                return Self.json(200, SalesforceCompositeResponse(subresponses: items.map { Self.failed($0.referenceId, failure) }).json)
            }
            for (n, i) in writable.enumerated() { responses[i] = await answer(items[i], results[n]) }
        } else {
            for i in writable {
                let result = try await owner.batch([items[i].operation!])
                responses[i] = await answer(items[i], result[0])
            }
        }
        return Self.json(200, SalesforceCompositeResponse(subresponses: responses.map { $0! }).json)
    }

    /// A subrequest's body as an object (a create or an update needs one).
    static func object(_ body: JSON?) throws -> JSONObject {
        guard let o = body?.objectValue else {
            throw MBaaSError(.invalidRequest, "The request body is not a JSON object.", vendorCode: "JSON_PARSER_ERROR")
        }
        return o
    }

    /// The sub-response of a write: 201 with the save result and a Location for a create, 204 otherwise; a
    /// failure is its REST error array.
    func answer(_ item: CompositeItem, _ result: BatchResult) async -> SalesforceCompositeResponse.Subresponse {
        switch result {
        case .failure(let e): return Self.failed(item.referenceId, e)
        case .success(let record):
            switch item.operation {
            case .create(let created)?:
                let id = record.id ?? ""
                await dialect.state.remember(id, type: created.className)
                return .init(body: SalesforceSaveResult(id: id, success: true).json(),
                             httpHeaders: ["Location": SalesforceRoute.sobject(created.className, id: id).path(version: version)],
                             httpStatusCode: 201, referenceId: item.referenceId)
            case .delete(let c, let id)?:
                await dialect.state.markDeleted(c + "/" + id)
                return .init(body: .null, httpStatusCode: 204, referenceId: item.referenceId)
            default:
                return .init(body: .null, httpStatusCode: 204, referenceId: item.referenceId)
            }
        }
    }

    static func failed(_ reference: String, _ e: MBaaSError) -> SalesforceCompositeResponse.Subresponse {
        let rest = SalesforceErrorCodec.restError(for: e)
        return .init(body: SalesforceErrorItem.body([rest.item]), httpStatusCode: rest.status, referenceId: reference)
    }

    static func halted(_ reference: String) -> SalesforceCompositeResponse.Subresponse {
        .init(body: SalesforceErrorItem.body([SalesforceCompositeResponse.processingHalted]), httpStatusCode: 400, referenceId: reference)
    }
}
