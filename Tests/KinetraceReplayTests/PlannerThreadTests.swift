import Foundation
import KinetraceSupport
import Testing
@testable import KinetraceImpairment
@testable import KinetraceReplay

/// The planner thread hands the sender exactly the schedule's steps, in
/// order, whatever the batch size; it stays a bounded distance ahead; and a
/// sender that stops early releases it.
@Suite struct PlannerThreadTests {
    @Test(arguments: [1, 7, 256])
    func stepsArriveExactlyAsTheScheduleGivesThem(batchSize: Int) {
        let input = makeInput(controllers: 5, frames: 97, jitterNs: 2_000_000, seed: 4)
        let options = ImpairedScheduleTests.harsh(seed: 9)
        let expected = ReplaySchedule.steps(input: input, options: options)
        #expect(expected.count > 400, "the harsh network adds impairment steps to 485 sends")
        let planner = PlannerThread(schedule: ReplaySchedule(input: input, options: options), share: { $0 },
                                    batchSize: batchSize, batchesAhead: 2)
        var got: [ReplaySchedule.Step] = []
        while let step = planner.next() { got.append(step) }
        #expect(got == expected)
        #expect(planner.next() == nil, "the end stays the end")
    }

    @Test func theShareFilterRunsOnThePlannerSide() {
        let input = makeInput(controllers: 6, frames: 20)
        var options = ReplayOptions()
        options.shard = ReplayShard(index: 1, count: 3)
        let shard = options.shard
        let expected = ReplaySchedule.steps(input: input, options: options).compactMap { Replayer.share($0, of: shard) }
        let planner = PlannerThread(schedule: ReplaySchedule(input: input, options: options), share: { Replayer.share($0, of: shard) },
                                    batchSize: 3)
        var got: [ReplaySchedule.Step] = []
        while let step = planner.next() { got.append(step) }
        #expect(!expected.isEmpty)
        #expect(got == expected)
    }

    /// A sender that breaks off after a few steps stops a planner that is waiting for room, and is not left hanging.
    @Test func stoppingEarlyReleasesAPlannerWaitingForRoom() {
        let input = makeInput(controllers: 50, frames: 200)
        let planner = PlannerThread(schedule: ReplaySchedule(input: input, options: ReplayOptions()), share: { $0 },
                                    batchSize: 4, batchesAhead: 2)
        for _ in 0..<5 { #expect(planner.next() != nil) }
        usleep(20_000)  // the planner fills the queue and waits
        let started = SystemClock.monotonicNs()
        planner.stop()
        #expect(SystemClock.monotonicNs() - started < 5_000_000_000, "stop returned")
    }

    @Test func theQueueHoldsAtMostItsCapacityAndBlocksTheProducerUntilThereIsRoom() {
        let queue = BatchQueue<Int>(capacity: 2)
        #expect(queue.put([1, 2]))
        #expect(queue.put([3]))
        let third = DispatchSemaphore(value: 0)
        let putDone = LockedFlag()
        let producer = Thread {
            _ = queue.put([4])
            putDone.set()
            third.signal()
        }
        producer.start()
        usleep(50_000)
        #expect(!putDone.value, "a full queue makes the producer wait")
        #expect(queue.take() == [1, 2])
        #expect(third.wait(timeout: .now() + 5) == .success, "room made: the producer goes on")
        #expect(queue.take() == [3])
        #expect(queue.take() == [4])
        queue.finish()
        #expect(queue.take() == nil, "finished and drained")

        let cancelled = BatchQueue<Int>(capacity: 1)
        #expect(cancelled.put([1]))
        cancelled.cancel()
        #expect(cancelled.put([2]) == false, "a cancelled queue takes nothing more")
        #expect(cancelled.take() == nil)
    }
}

private final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    var value: Bool { lock.withLock { flag } }
    func set() { lock.withLock { flag = true } }
}
