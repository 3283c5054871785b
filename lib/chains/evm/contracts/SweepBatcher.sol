// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface ISweepDelegate {
	function sweepToken(address token, address to) external;
	function sweepNative(address payable to) external;
}

/// Called by the sweeper wallet (`owner`, immutable) with a batch of deposit addresses that
/// delegate to SweepDelegate (EIP-7702); it asks each to send its whole balance to `to`.
/// All or nothing: one failing deposit reverts the batch (the receipt's status says it all).
contract SweepBatcher {
	address public immutable owner;

	error NotOwner();

	constructor(address owner_) {
		owner = owner_;
	}

	function sweep(address token, address to, address[] calldata deposits) external {
		if (msg.sender != owner) revert NotOwner();
		for (uint256 i = 0; i < deposits.length; i++) ISweepDelegate(deposits[i]).sweepToken(token, to);
	}

	function sweepNative(address payable to, address[] calldata deposits) external {
		if (msg.sender != owner) revert NotOwner();
		for (uint256 i = 0; i < deposits.length; i++) ISweepDelegate(deposits[i]).sweepNative(to);
	}
}
