/* The fast path's Python runner (kernels/zygote_runner.py), embedded in
 * hutch-zygote: nothing for it is installed where a sandbox could see it. */
	.section .rodata
	.global hutch_zygote_runner_src
hutch_zygote_runner_src:
	.incbin "kernels/zygote_runner.py"
	.byte 0
	.section .note.GNU-stack,"",@progbits
