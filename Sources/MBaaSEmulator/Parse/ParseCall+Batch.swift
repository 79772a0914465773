import Foundation
import MBaaSCore
import MBaaSParseWire

/// `POST /batch` and files.
extension ParseCall {
    /// At most this many requests in one batch (the pre-2023 REST guide: "up to 50 objects in one call").
    static let maxBatchRequests = 50

    /// Each request runs as if sent alone, with the batch's keys and session; the answer is one item per request,
    /// `{"success":…}` or `{"error":{…}}`, and the batch is not atomic [doc]. Paths carry the mount prefix [doc].
    func batch() async throws -> TransportResponse {
        let batch = try ParseBatchRequest(json: .object(try jsonBody()))
        guard batch.requests.count <= Self.maxBatchRequests else {
            throw MBaaSError(.invalidRequest, "too many requests in one batch (at most \(Self.maxBatchRequests))", vendorCode: "107")
        }
        var headers = request.headers
        headers[.contentLength] = nil
        headers[.contentType] = "application/json"
        var items: [ParseBatchResponse.Item] = []
        for item in batch.requests {
            guard let method = TransportRequest.Method(name: item.method),
                  [.get, .post, .put, .delete].contains(method), item.path.hasPrefix("/"),
                  let url = URL(string: origin + item.path)
            else {
                items.append(.error(ParseErrorBody(code: 107, error: "invalid batch request: \(item.method) \(item.path)")))
                continue
            }
            let sub = TransportRequest(method: method, url: url, headers: headers,
                                       body: item.body.map { JSON.object($0).data() })
            let answer = await dialect.respond(to: sub, inBatch: true)
            let json = (try? JSON.parse(answer.body)) ?? .object([:])
            if answer.isSuccess {
                items.append(.success(json))
            } else {
                items.append(.error(ParseErrorBody(json: json) ?? ParseErrorBody(code: 1, error: "HTTP \(answer.status.code)")))
            }
        }
        return Self.json(200, ParseBatchResponse(items: items).json)
    }

    // MARK: Files

    /// `POST /files/{name}` with the raw bytes: stored as `<32 hex>_<name>`, answered 201 with its url [doc].
    func upload(_ name: String) async throws -> TransportResponse {
        guard ParseWire.isValidFileName(name) else {
            throw MBaaSError(.invalidRequest, "Filename contains invalid characters.", vendorCode: "122")
        }
        let data = request.body ?? Data()
        guard data.count <= dialect.configuration.maxFileSize else {
            throw MBaaSError(.invalidRequest, "File size exceeds maximum allowed.", vendorCode: "130")
        }
        let stored = dialect.configuration.filePrefix() + "_" + name
        let contentType = request.headers[.contentType] ?? "application/octet-stream"
        // Parse files have no ACL: anyone who knows the url reads them; only the master key deletes them.
        _ = try await owner.upload(FileUpload(name: stored, source: .data(data), contentType: contentType,
                                              acl: ACL([.everyone: .read])))
        let url = fileURL(stored)
        return Self.json(201, ParseFileCreated(name: stored, url: url).json, headers: HTTPFields([("Location", url)]))
    }

    func fileURL(_ stored: String) -> String {
        let c = dialect.configuration
        return origin + c.mount + "/files/" + percentEncode(c.applicationId) + "/" + percentEncode(stored)
    }

    /// `GET /files/{appId}/{name}`: the bytes with their content type; an unknown name is 404 [inferred].
    func download(_ name: String) async throws -> TransportResponse {
        let data: Data
        do {
            data = try await backend.download(FileReference(name: name))
        } catch let e as MBaaSError where e.kind == .notFound || e.kind == .invalidRequest {
            return ParseDialect.notFound(.get, dialect.percentEncodedPath(request.url))
        }
        let listed: [FileInfo] = (try? await owner.listFiles(prefix: name, limit: 1)) ?? []
        let type = listed.filter { $0.reference.name == name }.compactMap(\.reference.contentType).first ?? guessContentType(forFileName: name)
        return TransportResponse(status: 200, headers: [.contentType: type], body: data)
    }

    /// `DELETE /files/{name}`: the master key only [doc]; without it parse-server's master-key middleware answers
    /// (``masterKeyRequired``).
    func deleteFile(_ name: String) async throws -> TransportResponse {
        guard isMaster else { return Self.masterKeyRequired }
        do { try await owner.deleteFile(FileReference(name: name)) } catch let e as MBaaSError where e.kind == .notFound {
            throw MBaaSError(.invalidRequest, "Could not delete file.", vendorCode: "131")
        }
        return Self.json(200, .object([:]))
    }
}
