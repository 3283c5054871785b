// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC20Balance {
	function balanceOf(address account) external view returns (uint256);
}

/// The code a deposit address delegates to with EIP-7702 (docs/withdrawals.md "EVM sweeps"): it
/// lets our SweepBatcher, and nobody else, move the whole token (or ETH) balance of the deposit
/// address to a destination, so the sweeper wallet pays the gas and the deposit address needs none.
///
/// Storage-less on purpose: the code runs in the deposit address's own account, whose storage
/// outlives any delegation; a delegate that writes nothing can never collide with another one.
/// `batcher` is immutable, so it lives in the code, not in the account's storage.
contract SweepDelegate {
	address public immutable batcher;

	error NotBatcher();
	error TransferFailed();

	constructor(address batcher_) {
		batcher = batcher_;
	}

	/// Moves the whole balance of `token` held by this (deposit) address to `to`. No-op at 0.
	function sweepToken(address token, address to) external {
		if (msg.sender != batcher) revert NotBatcher();
		uint256 amount = IERC20Balance(token).balanceOf(address(this));
		if (amount == 0) return;
		// Low-level call: tokens that return nothing (USDT) and tokens that return true both pass.
		(bool ok, bytes memory ret) = token.call(abi.encodeWithSelector(0xa9059cbb, to, amount));
		if (!ok || (ret.length != 0 && !abi.decode(ret, (bool)))) revert TransferFailed();
	}

	/// Moves the whole ETH balance of this (deposit) address to `to`.
	function sweepNative(address payable to) external {
		if (msg.sender != batcher) revert NotBatcher();
		(bool ok, ) = to.call{value: address(this).balance}("");
		if (!ok) revert TransferFailed();
	}

	/// A delegated deposit address keeps accepting plain ETH payments.
	receive() external payable {}
}
